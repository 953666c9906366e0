//! The statement-level Flink SQL parser.
//!
//! Like DataFusion's `DFParser`, [`FlinkParser`] walks sqlparser's token stream with a sqlparser
//! [`Parser`] and handles Flink's DDL, `SET`/`RESET`, statement sets and client statements itself,
//! delegating queries and expressions to sqlparser (with [`FlinkDialect`] hooks). Errors become
//! [`Diagnostic`]s; after an error, parsing resumes after the next `;`.

use sqlparser::ast::Ident;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location as SqlLocation, Token, TokenWithSpan, Tokenizer};

use crate::ast::{
    Column, ColumnKind, ConfigKey, ConfigOption, CreateCatalog, CreateDatabase, CreateFunction,
    CreateTable, CreateView, Drop, DropObject, Explain, Insert, LikeClause, LikeFeature,
    LikeOption, LikeStrategy, MatchWithin, PrimaryKey, Script, Statement, StatementKind,
    StatementSet, StatementSetSyntax, TableOption, Unparsed, Use, Watermark,
};
use crate::diagnostic::Diagnostic;
use crate::dialect::FlinkDialect;
use crate::hints::{find_hint_comments, HintComment};
use crate::span::{Location, Span};
use crate::types::{error_at, parse_type};

/// The dialect every Riffle parser uses.
static DIALECT: FlinkDialect = FlinkDialect;

/// Diagnostic code of every syntax error.
pub const PARSE_ERROR: &str = "parse-error";

/// Statements that are only reported, with the number of leading words that name them.
const CLIENT_STATEMENTS: &[(&str, usize)] = &[
    ("SHOW", 2),
    ("DESCRIBE", 1),
    ("DESC", 1),
    ("LOAD", 2),
    ("UNLOAD", 2),
    ("ADD", 2),
    ("REMOVE", 2),
    ("ANALYZE", 2),
    ("TRUNCATE", 2),
    ("CALL", 1),
];

/// Result of parsing a script: the statements that parsed, and diagnostics for the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedScript {
    /// Statements that parsed, in source order.
    pub script: Script,
    /// Syntax errors (code `parse-error`) and warnings (e.g. `invalid-hint`), in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// `WITHIN` clauses of `MATCH_RECOGNIZE` (sqlparser has no node for them; see [`MatchWithin`]).
    pub match_within: Vec<MatchWithin>,
}

/// Tokenizes `sql` with the Flink dialect.
fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>, sqlparser::tokenizer::TokenizerError> {
    Tokenizer::new(&DIALECT, sql).tokenize_with_location()
}

/// Converts a sqlparser location into Riffle's.
pub(crate) fn location(loc: SqlLocation) -> Location {
    Location::new(loc.line, loc.column)
}

/// Parses a whole script. Never panics; every problem is a diagnostic.
pub(crate) fn parse_script(sql: &str) -> ParsedScript {
    let mut diagnostics = Vec::new();
    let mut tokens = Vec::new();
    if let Err(err) = Tokenizer::new(&DIALECT, sql).tokenize_with_location_into_buf(&mut tokens) {
        let loc = location(err.location);
        let loc = if loc.line == 0 {
            Location::new(1, 1)
        } else {
            loc
        };
        diagnostics.push(Diagnostic::error(
            PARSE_ERROR,
            readable_message(&err.message),
            Span::new(loc, loc),
        ));
        // The tokenizer cannot resynchronise after e.g. an unclosed quote: keep the complete
        // statements before the error and drop the one holding it.
        let last_semicolon = tokens.iter().rposition(|t| t.token == Token::SemiColon);
        tokens.truncate(last_semicolon.map_or(0, |i| i + 1));
    }
    let mut parser = FlinkParser::from_tokens(sql, tokens);
    let mut statements = parser.parse_statements();
    for within in &parser.match_within {
        if let Some(s) = statements
            .iter_mut()
            .find(|s| s.span.start <= within.span.start && within.span.end <= s.span.end)
        {
            s.match_within.push(within.clone());
        }
    }
    // A malformed hint is worth a warning only where Flink would read it: inside a statement.
    for comment in &parser.hint_comments {
        if let Some(error) = &comment.error {
            if statements
                .iter()
                .any(|s| s.span.start <= comment.span.start && comment.span.end <= s.span.end)
            {
                parser.diagnostics.push(error.clone());
            }
        }
    }
    let mut parsed = ParsedScript {
        script: Script { statements },
        diagnostics,
        match_within: parser.match_within,
    };
    parsed.diagnostics.append(&mut parser.diagnostics);
    parsed.diagnostics.sort_by_key(|d| d.span.start);
    parsed
}

/// A Flink statement parser over one script's tokens.
pub(crate) struct FlinkParser<'a> {
    sql: &'a str,
    /// The tokens the sqlparser parser walks (a copy, for span look-ups by index).
    tokens: Vec<TokenWithSpan>,
    parser: Parser<'a>,
    hint_comments: Vec<HintComment>,
    diagnostics: Vec<Diagnostic>,
    match_within: Vec<MatchWithin>,
}

impl<'a> FlinkParser<'a> {
    /// A parser over `sql`; fails only if `sql` does not tokenize.
    pub(crate) fn new(sql: &'a str) -> Result<Self, Box<Diagnostic>> {
        match tokenize(sql) {
            Ok(tokens) => Ok(Self::from_tokens(sql, tokens)),
            Err(err) => {
                let loc = location(err.location);
                Err(Box::new(Diagnostic::error(
                    PARSE_ERROR,
                    readable_message(&err.message),
                    Span::new(loc, loc),
                )))
            }
        }
    }

    fn from_tokens(sql: &'a str, tokens: Vec<TokenWithSpan>) -> Self {
        let hint_comments = find_hint_comments(&tokens);
        let mut match_within = Vec::new();
        let mut diagnostics = Vec::new();
        let tokens = crate::match_within::extract(tokens, &mut match_within, &mut diagnostics);
        let parser = Parser::new(&DIALECT).with_tokens_with_locations(tokens.clone());
        Self {
            sql,
            tokens,
            parser,
            hint_comments,
            diagnostics,
            match_within,
        }
    }

    /// Runs `f` on the whole input and requires it to consume every token.
    pub(crate) fn parse_standalone<T>(
        &mut self,
        f: impl FnOnce(&mut Parser<'a>) -> Result<T, ParserError>,
    ) -> Result<T, Diagnostic> {
        let result = f(&mut self.parser).and_then(|value| {
            if self.parser.peek_token_ref().token == Token::EOF {
                Ok(value)
            } else {
                let tok = self.parser.peek_token();
                self.parser.expected("end of input", tok)
            }
        });
        result.map_err(|err| self.diagnostic(err))
    }

    /// Parses statements until the end of input, recovering after errors.
    fn parse_statements(&mut self) -> Vec<Statement> {
        let mut statements = Vec::new();
        loop {
            while self.parser.consume_token(&Token::SemiColon) {}
            if self.parser.peek_token_ref().token == Token::EOF {
                break;
            }
            let start = self.peek_start();
            let result = self.parse_statement(false).and_then(|statement| {
                if matches!(
                    self.parser.peek_token_ref().token,
                    Token::SemiColon | Token::EOF
                ) {
                    Ok(statement)
                } else {
                    let tok = self.parser.peek_token();
                    self.parser.expected("';' or end of input", tok)
                }
            });
            match result {
                Ok(statement) => statements.push(statement),
                Err(err) => {
                    let diagnostic = self.diagnostic(err);
                    self.recover(diagnostic.span.start.max(location(start)));
                    self.diagnostics.push(diagnostic);
                }
            }
        }
        statements
    }

    /// Parses one statement (not its terminating `;`).
    fn parse_statement(&mut self, in_explain: bool) -> Result<Statement, ParserError> {
        let start = self.peek_start();
        let kind = self.parse_statement_kind(in_explain)?;
        Ok(self.finish_statement(kind, start))
    }

    /// Wraps a statement kind with its span and the hints inside it.
    fn finish_statement(&self, kind: StatementKind, start: SqlLocation) -> Statement {
        let span = self.span_from(start);
        // A hint may follow the statement's last token (`FROM t /*+ OPTIONS(..) */;`): take every
        // hint comment up to the next token.
        let next = self.parser.peek_token_ref();
        let bound = (next.token != Token::EOF).then(|| location(next.span.start));
        let hints = self
            .hint_comments
            .iter()
            .filter(|c| c.span.start >= span.start && bound.is_none_or(|b| c.span.start < b))
            .flat_map(|c| c.hints.iter().cloned())
            .collect();
        // Filled in once the whole script is parsed (`parse_script`).
        let match_within = Vec::new();
        Statement {
            kind,
            span,
            hints,
            match_within,
        }
    }

    fn parse_statement_kind(&mut self, in_explain: bool) -> Result<StatementKind, ParserError> {
        let Some(word) = self.peek_word() else {
            if self.parser.peek_token_ref().token == Token::LParen {
                return Ok(StatementKind::Query(self.parser.parse_query()?));
            }
            return self.expected("a statement");
        };
        match word.as_str() {
            "SELECT" | "WITH" | "VALUES" => Ok(StatementKind::Query(self.parser.parse_query()?)),
            "CREATE" => self.parse_create(),
            "DROP" => self.parse_drop(),
            "ALTER" => Ok(StatementKind::Alter(Box::new(self.parse_unparsed(2)?))),
            "SET" => self.parse_set(),
            "RESET" => self.parse_reset(),
            "USE" => self.parse_use(),
            "INSERT" | "UPSERT" => Ok(StatementKind::Insert(Box::new(self.parse_insert()?))),
            "EXECUTE" => self.parse_execute(),
            "BEGIN" => self.parse_begin_statement_set(),
            "EXPLAIN" if !in_explain => self.parse_explain(),
            _ => match CLIENT_STATEMENTS.iter().find(|(w, _)| *w == word) {
                Some((_, words)) => Ok(StatementKind::Client(Box::new(
                    self.parse_unparsed(*words)?,
                ))),
                None => self.expected("a statement"),
            },
        }
    }

    // ---------------------------------------------------------------- CREATE

    fn parse_create(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_word("CREATE")?;
        if self.peek_words(&["OR", "REPLACE"]) {
            let loc = self.peek_start();
            return Err(error_at("CREATE OR REPLACE is not supported", loc));
        }
        let temporary = self.parse_word("TEMPORARY");
        let system = temporary && self.parse_word("SYSTEM");
        let Some(object) = self.peek_word() else {
            return self.expected("TABLE, VIEW, FUNCTION, CATALOG or DATABASE after CREATE");
        };
        if system && object != "FUNCTION" {
            return self.expected("FUNCTION after CREATE TEMPORARY SYSTEM");
        }
        match object.as_str() {
            "TABLE" => Ok(StatementKind::CreateTable(Box::new(
                self.parse_create_table(temporary)?,
            ))),
            "VIEW" => Ok(StatementKind::CreateView(Box::new(
                self.parse_create_view(temporary)?,
            ))),
            "FUNCTION" => Ok(StatementKind::CreateFunction(Box::new(
                self.parse_create_function(temporary, system)?,
            ))),
            "CATALOG" if !temporary => Ok(StatementKind::CreateCatalog(Box::new(
                self.parse_create_catalog()?,
            ))),
            "DATABASE" if !temporary => Ok(StatementKind::CreateDatabase(Box::new(
                self.parse_create_database()?,
            ))),
            "MATERIALIZED" => {
                let loc = self.peek_start();
                Err(error_at("CREATE MATERIALIZED TABLE is not supported", loc))
            }
            _ => self.expected("TABLE, VIEW, FUNCTION, CATALOG or DATABASE after CREATE"),
        }
    }

    fn parse_create_table(&mut self, temporary: bool) -> Result<CreateTable, ParserError> {
        self.expect_word("TABLE")?;
        let if_not_exists = self.parse_words(&["IF", "NOT", "EXISTS"]);
        let name_start = self.peek_start();
        let name = self.parser.parse_object_name(false)?;
        let name_span = self.span_from(name_start);
        let mut table = CreateTable {
            name,
            temporary,
            if_not_exists,
            columns: Vec::new(),
            watermark: None,
            primary_key: None,
            partitioned_by: Vec::new(),
            comment: None,
            options: Vec::new(),
            like: None,
            name_span,
            as_query: None,
        };
        if self.parser.consume_token(&Token::LParen) {
            loop {
                self.parse_table_element(&mut table)?;
                if !self.parser.consume_token(&Token::Comma) {
                    break;
                }
            }
            self.parser.expect_token(&Token::RParen)?;
        }
        if self.parse_word("COMMENT") {
            table.comment = Some(self.parser.parse_literal_string()?);
        }
        if self.peek_words(&["DISTRIBUTED"]) {
            let loc = self.peek_start();
            return Err(error_at(
                "DISTRIBUTED BY / INTO BUCKETS is not supported",
                loc,
            ));
        }
        if self.parse_words(&["PARTITIONED", "BY"]) {
            table.partitioned_by = self.parse_ident_list()?;
        }
        if self.parse_word("WITH") {
            table.options = self.parse_options()?;
        }
        if self.peek_words(&["LIKE"]) {
            table.like = Some(self.parse_like()?);
        } else if self.parse_word("AS") {
            table.as_query = Some(self.parser.parse_query()?);
        }
        Ok(table)
    }

    /// One element of a `CREATE TABLE` list: a column, a watermark or a table constraint.
    fn parse_table_element(&mut self, table: &mut CreateTable) -> Result<(), ParserError> {
        let start = self.peek_start();
        if self.peek_words(&["WATERMARK"]) {
            let watermark = self.parse_watermark()?;
            if table.watermark.is_some() {
                return Err(error_at(
                    "Multiple WATERMARK definitions are not supported",
                    start,
                ));
            }
            table.watermark = Some(watermark);
            return Ok(());
        }
        if self.peek_words(&["PRIMARY"]) || self.peek_words(&["CONSTRAINT"]) {
            let constraint_name = self.parse_constraint_name()?;
            self.expect_words(&["PRIMARY", "KEY"])?;
            let columns = self.parse_ident_list()?;
            let not_enforced = self.parse_enforcement()?;
            let pk = PrimaryKey {
                constraint_name,
                columns,
                not_enforced,
                span: self.span_from(start),
            };
            return set_primary_key(table, pk, start);
        }
        if self.peek_words(&["UNIQUE"])
            || self.peek_words(&["CHECK"])
            || self.peek_words(&["FOREIGN"])
        {
            return Err(error_at(
                "Flink supports only PRIMARY KEY constraints",
                start,
            ));
        }
        let name = self.parser.parse_identifier()?;
        let kind = if self.parse_word("AS") {
            ColumnKind::Computed {
                expr: self.parser.parse_expr()?,
            }
        } else {
            let data_type = parse_type(&mut self.parser)?;
            if self.parse_word("METADATA") {
                let key = if self.parse_word("FROM") {
                    Some(self.parser.parse_literal_string()?)
                } else {
                    None
                };
                ColumnKind::Metadata {
                    data_type,
                    key,
                    is_virtual: self.parse_word("VIRTUAL"),
                }
            } else if self.parse_word("HEADER") {
                ColumnKind::Header { data_type }
            } else {
                let pk_start = self.peek_start();
                let primary_key =
                    if self.peek_words(&["PRIMARY"]) || self.peek_words(&["CONSTRAINT"]) {
                        let constraint_name = self.parse_constraint_name()?;
                        self.expect_words(&["PRIMARY", "KEY"])?;
                        let not_enforced = self.parse_enforcement()?;
                        let pk = PrimaryKey {
                            constraint_name,
                            columns: vec![name.clone()],
                            not_enforced,
                            span: self.span_from(pk_start),
                        };
                        set_primary_key(table, pk, pk_start)?;
                        true
                    } else {
                        false
                    };
                ColumnKind::Physical {
                    data_type,
                    primary_key,
                }
            }
        };
        let comment = if self.parse_word("COMMENT") {
            Some(self.parser.parse_literal_string()?)
        } else {
            None
        };
        table.columns.push(Column {
            name,
            kind,
            comment,
            span: self.span_from(start),
        });
        Ok(())
    }

    /// `[CONSTRAINT name]` before `PRIMARY KEY`.
    fn parse_constraint_name(&mut self) -> Result<Option<Ident>, ParserError> {
        if self.parse_word("CONSTRAINT") {
            Ok(Some(self.parser.parse_identifier()?))
        } else {
            Ok(None)
        }
    }

    /// `NOT ENFORCED` (true), `ENFORCED` or nothing (false).
    fn parse_enforcement(&mut self) -> Result<bool, ParserError> {
        if self.parse_words(&["NOT", "ENFORCED"]) {
            return Ok(true);
        }
        self.parse_word("ENFORCED");
        Ok(false)
    }

    /// `WATERMARK [name] FOR column AS expr`.
    fn parse_watermark(&mut self) -> Result<Watermark, ParserError> {
        let start = self.peek_start();
        self.expect_word("WATERMARK")?;
        let name = if self.peek_words(&["FOR"]) {
            None
        } else {
            Some(self.parser.parse_identifier()?)
        };
        self.expect_word("FOR")?;
        let mut column = vec![self.parser.parse_identifier()?];
        while self.parser.consume_token(&Token::Period) {
            column.push(self.parser.parse_identifier()?);
        }
        self.expect_word("AS")?;
        let expr = self.parser.parse_expr()?;
        Ok(Watermark {
            name,
            column,
            expr,
            span: self.span_from(start),
        })
    }

    /// `(k = 'v', ...)` after `WITH`.
    fn parse_options(&mut self) -> Result<Vec<TableOption>, ParserError> {
        self.parser.expect_token(&Token::LParen)?;
        let mut options = Vec::new();
        if self.parser.consume_token(&Token::RParen) {
            return Ok(options);
        }
        loop {
            options.push(self.parse_option()?);
            if !self.parser.consume_token(&Token::Comma) {
                break;
            }
        }
        self.parser.expect_token(&Token::RParen)?;
        Ok(options)
    }

    /// `'key' = 'value'`, or legacy `key = 'value'` with an unquoted (dotted, dashed) key.
    fn parse_option(&mut self) -> Result<TableOption, ParserError> {
        let key_start = self.peek_start();
        let (key, key_unquoted) = match self.parser.peek_token_ref().token.clone() {
            Token::SingleQuotedString(key) => {
                self.parser.next_token();
                (key, false)
            }
            Token::Word(_) => (self.parse_raw_key()?, true),
            _ => return self.expected("an option key ('key' = 'value')"),
        };
        let key_span = self.span_from(key_start);
        self.parser.expect_token(&Token::Eq)?;
        let value_start = self.peek_start();
        let value = self.parser.parse_literal_string()?;
        Ok(TableOption {
            key,
            value,
            key_unquoted,
            key_span,
            value_span: self.span_from(value_start),
        })
    }

    /// An unquoted key such as `scan.startup.mode` or `table.exec.mini-batch.enabled`: words joined
    /// by `.` or `-`, taken verbatim from the source.
    fn parse_raw_key(&mut self) -> Result<String, ParserError> {
        let start = self.peek_start();
        let mut expect_word = true;
        loop {
            let tok = self.parser.peek_token_ref().token.clone();
            match tok {
                Token::Word(_) | Token::Number(_, _) if expect_word => expect_word = false,
                Token::Period | Token::Minus if !expect_word => expect_word = true,
                _ if expect_word => return self.expected("a key"),
                _ => break,
            }
            self.parser.next_token();
        }
        Ok(self.source_text(self.span_from(start)).to_string())
    }

    /// `LIKE source [(INCLUDING ALL ...)]`.
    fn parse_like(&mut self) -> Result<LikeClause, ParserError> {
        let start = self.peek_start();
        self.expect_word("LIKE")?;
        let source = self.parser.parse_object_name(false)?;
        let mut options = Vec::new();
        if self.parser.consume_token(&Token::LParen) {
            while !self.parser.consume_token(&Token::RParen) {
                let strategy = match self.peek_word().as_deref() {
                    Some("INCLUDING") => LikeStrategy::Including,
                    Some("EXCLUDING") => LikeStrategy::Excluding,
                    Some("OVERWRITING") => LikeStrategy::Overwriting,
                    _ => return self.expected("INCLUDING, EXCLUDING, OVERWRITING or ')'"),
                };
                self.parser.next_token();
                let feature = match self.peek_word().as_deref() {
                    Some("ALL") => LikeFeature::All,
                    Some("CONSTRAINTS") => LikeFeature::Constraints,
                    Some("GENERATED") => LikeFeature::Generated,
                    Some("METADATA") => LikeFeature::Metadata,
                    Some("OPTIONS") => LikeFeature::Options,
                    Some("PARTITIONS") => LikeFeature::Partitions,
                    Some("WATERMARKS") => LikeFeature::Watermarks,
                    _ => return self.expected(
                        "ALL, CONSTRAINTS, GENERATED, METADATA, OPTIONS, PARTITIONS or WATERMARKS",
                    ),
                };
                self.parser.next_token();
                options.push(LikeOption { strategy, feature });
                let _ = self.parser.consume_token(&Token::Comma);
            }
        }
        Ok(LikeClause {
            source,
            options,
            span: self.span_from(start),
        })
    }

    fn parse_create_view(&mut self, temporary: bool) -> Result<CreateView, ParserError> {
        self.expect_word("VIEW")?;
        let if_not_exists = self.parse_words(&["IF", "NOT", "EXISTS"]);
        let name_start = self.peek_start();
        let name = self.parser.parse_object_name(false)?;
        let name_span = self.span_from(name_start);
        let columns = if self.parser.peek_token_ref().token == Token::LParen {
            self.parse_ident_list()?
        } else {
            Vec::new()
        };
        if self.parse_word("COMMENT") {
            self.parser.parse_literal_string()?;
        }
        self.expect_word("AS")?;
        let query = *self.parser.parse_query()?;
        Ok(CreateView {
            name,
            temporary,
            if_not_exists,
            columns,
            query,
            name_span,
        })
    }

    fn parse_create_function(
        &mut self,
        temporary: bool,
        system: bool,
    ) -> Result<CreateFunction, ParserError> {
        self.expect_word("FUNCTION")?;
        let if_not_exists = self.parse_words(&["IF", "NOT", "EXISTS"]);
        let name_start = self.peek_start();
        let name = self.parser.parse_object_name(false)?;
        let name_span = self.span_from(name_start);
        self.expect_word("AS")?;
        let identifier = self.parser.parse_literal_string()?;
        let language = if self.parse_word("LANGUAGE") {
            Some(self.parser.parse_identifier()?.value.to_ascii_uppercase())
        } else {
            None
        };
        let mut jars = Vec::new();
        if self.parse_word("USING") {
            loop {
                self.expect_word("JAR")?;
                jars.push(self.parser.parse_literal_string()?);
                if !self.parser.consume_token(&Token::Comma) {
                    break;
                }
            }
        }
        Ok(CreateFunction {
            name,
            temporary,
            system,
            if_not_exists,
            identifier,
            language,
            jars,
            name_span,
        })
    }

    fn parse_create_catalog(&mut self) -> Result<CreateCatalog, ParserError> {
        self.expect_word("CATALOG")?;
        self.parse_words(&["IF", "NOT", "EXISTS"]);
        let name = self.parser.parse_identifier()?;
        if self.parse_word("COMMENT") {
            self.parser.parse_literal_string()?;
        }
        self.expect_word("WITH")?;
        let options = self.parse_options()?;
        Ok(CreateCatalog { name, options })
    }

    fn parse_create_database(&mut self) -> Result<CreateDatabase, ParserError> {
        self.expect_word("DATABASE")?;
        let if_not_exists = self.parse_words(&["IF", "NOT", "EXISTS"]);
        let name = self.parser.parse_object_name(false)?;
        let comment = if self.parse_word("COMMENT") {
            Some(self.parser.parse_literal_string()?)
        } else {
            None
        };
        let options = if self.parse_word("WITH") {
            self.parse_options()?
        } else {
            Vec::new()
        };
        Ok(CreateDatabase {
            name,
            if_not_exists,
            comment,
            options,
        })
    }

    // ---------------------------------------------------------------- other DDL and config

    fn parse_drop(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_word("DROP")?;
        let temporary = self.parse_word("TEMPORARY");
        let system = temporary && self.parse_word("SYSTEM");
        let object = match self.peek_word().as_deref() {
            Some("TABLE") => DropObject::Table,
            Some("VIEW") => DropObject::View,
            Some("FUNCTION") => DropObject::Function,
            Some("CATALOG") => DropObject::Catalog,
            Some("DATABASE") => DropObject::Database,
            _ => return self.expected("TABLE, VIEW, FUNCTION, CATALOG or DATABASE after DROP"),
        };
        self.parser.next_token();
        let if_exists = self.parse_words(&["IF", "EXISTS"]);
        let name = self.parser.parse_object_name(false)?;
        // RESTRICT is Flink's default; CASCADE only applies to databases.
        if !self.parse_word("RESTRICT") {
            self.parse_word("CASCADE");
        }
        Ok(StatementKind::Drop(Box::new(Drop {
            object,
            temporary,
            system,
            if_exists,
            name,
        })))
    }

    /// `SET`, `SET 'k' = 'v'` or `SET k = v` (key and value taken verbatim).
    fn parse_set(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_word("SET")?;
        if self.at_statement_end() {
            return Ok(StatementKind::Set(None));
        }
        let key_start = self.peek_start();
        let key = match self.parser.peek_token_ref().token.clone() {
            Token::SingleQuotedString(key) => {
                self.parser.next_token();
                key
            }
            Token::Word(_) => self.parse_raw_key()?,
            _ => return self.expected("a configuration key after SET"),
        };
        let key_span = self.span_from(key_start);
        self.parser.expect_token(&Token::Eq)?;
        let (value, value_span) = self.parse_raw_value()?;
        Ok(StatementKind::Set(Some(ConfigOption {
            key,
            value,
            key_span,
            value_span,
        })))
    }

    /// The value of `SET k = v`: one string literal (unquoted), or the raw text up to `;`.
    fn parse_raw_value(&mut self) -> Result<(String, Span), ParserError> {
        let start = self.peek_start();
        if let Token::SingleQuotedString(value) = self.parser.peek_token_ref().token.clone() {
            self.parser.next_token();
            if self.at_statement_end() {
                return Ok((value, self.span_from(start)));
            }
        }
        if self.at_statement_end() {
            return self.expected("a value");
        }
        while !self.at_statement_end() {
            self.parser.next_token();
        }
        let span = self.span_from(start);
        Ok((self.source_text(span).to_string(), span))
    }

    fn parse_reset(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_word("RESET")?;
        if self.at_statement_end() {
            return Ok(StatementKind::Reset(None));
        }
        let start = self.peek_start();
        let key = match self.parser.peek_token_ref().token.clone() {
            Token::SingleQuotedString(key) => {
                self.parser.next_token();
                key
            }
            Token::Word(_) => self.parse_raw_key()?,
            _ => return self.expected("a configuration key after RESET"),
        };
        Ok(StatementKind::Reset(Some(ConfigKey {
            key,
            span: self.span_from(start),
        })))
    }

    fn parse_use(&mut self) -> Result<StatementKind, ParserError> {
        if self.peek_nth_word(1).as_deref() == Some("MODULES") {
            return Ok(StatementKind::Client(Box::new(self.parse_unparsed(2)?)));
        }
        self.expect_word("USE")?;
        let catalog = self.parse_word("CATALOG");
        let name = self.parser.parse_object_name(false)?;
        Ok(StatementKind::Use(Box::new(Use { catalog, name })))
    }

    // ---------------------------------------------------------------- INSERT and statement sets

    /// `INSERT INTO|OVERWRITE t [PARTITION (k = v, ...)] [(cols)] query`.
    fn parse_insert(&mut self) -> Result<Insert, ParserError> {
        let start = self.peek_start();
        if self.peek_words(&["UPSERT"]) {
            return Err(error_at(
                "UPSERT INTO is not supported by Flink; use INSERT INTO",
                start,
            ));
        }
        self.expect_word("INSERT")?;
        let overwrite = if self.parse_word("OVERWRITE") {
            true
        } else {
            self.expect_word("INTO")?;
            false
        };
        let table_start = self.peek_start();
        let table = self.parser.parse_object_name(false)?;
        let table_span = self.span_from(table_start);
        let mut partition = Vec::new();
        if self.parse_word("PARTITION") {
            self.parser.expect_token(&Token::LParen)?;
            loop {
                let key = self.parser.parse_identifier()?;
                self.parser.expect_token(&Token::Eq)?;
                partition.push((key, self.parser.parse_expr()?));
                if !self.parser.consume_token(&Token::Comma) {
                    break;
                }
            }
            self.parser.expect_token(&Token::RParen)?;
        }
        let columns = if self.parser.peek_token_ref().token == Token::LParen
            && !matches!(
                self.peek_nth_word(1).as_deref(),
                Some("SELECT" | "WITH" | "VALUES")
            )
            && self.parser.peek_nth_token_ref(1).token != Token::LParen
        {
            self.parse_ident_list()?
        } else {
            Vec::new()
        };
        let query = *self.parser.parse_query()?;
        Ok(Insert {
            table,
            overwrite,
            partition,
            columns,
            query,
            span: self.span_from(start),
            table_span,
        })
    }

    fn parse_execute(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_word("EXECUTE")?;
        if self.parse_words(&["STATEMENT", "SET"]) {
            return Ok(StatementKind::StatementSet(Box::new(
                self.parse_statement_set_body(StatementSetSyntax::ExecuteBegin)?,
            )));
        }
        match self.peek_word().as_deref() {
            Some("INSERT") => Ok(StatementKind::Insert(Box::new(self.parse_insert()?))),
            Some("SELECT" | "WITH" | "VALUES") => {
                Ok(StatementKind::Query(self.parser.parse_query()?))
            }
            Some("PLAN") => {
                let loc = self.peek_start();
                Err(error_at(
                    "EXECUTE PLAN (compiled plans) is not supported",
                    loc,
                ))
            }
            _ if self.parser.peek_token_ref().token == Token::LParen => {
                Ok(StatementKind::Query(self.parser.parse_query()?))
            }
            _ => self.expected("STATEMENT SET, INSERT or a query after EXECUTE"),
        }
    }

    /// `BEGIN STATEMENT SET; INSERT ...; ... END`.
    fn parse_begin_statement_set(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_words(&["BEGIN", "STATEMENT", "SET"])?;
        self.parser.expect_token(&Token::SemiColon)?;
        let inserts = self.parse_statement_set_inserts()?;
        Ok(StatementKind::StatementSet(Box::new(StatementSet {
            inserts,
            syntax: StatementSetSyntax::BeginStatementSet,
        })))
    }

    /// `BEGIN INSERT ...; ... END` after `[EXECUTE] STATEMENT SET`.
    fn parse_statement_set_body(
        &mut self,
        syntax: StatementSetSyntax,
    ) -> Result<StatementSet, ParserError> {
        self.expect_word("BEGIN")?;
        let inserts = self.parse_statement_set_inserts()?;
        Ok(StatementSet { inserts, syntax })
    }

    /// `INSERT ...;` statements up to and including `END`. A broken `INSERT` is reported and
    /// skipped, so the set's other inserts are still checked.
    fn parse_statement_set_inserts(&mut self) -> Result<Vec<Insert>, ParserError> {
        let mut inserts = Vec::new();
        loop {
            while self.parser.consume_token(&Token::SemiColon) {}
            if self.parse_word("END") {
                return Ok(inserts);
            }
            if self.parser.peek_token_ref().token == Token::EOF {
                return self.expected("END to close the statement set");
            }
            let result = if self.peek_words(&["INSERT"]) {
                self.parse_insert().and_then(|insert| {
                    self.parser.expect_token(&Token::SemiColon)?;
                    Ok(insert)
                })
            } else {
                self.expected("INSERT or END in a statement set")
            };
            match result {
                Ok(insert) => inserts.push(insert),
                Err(err) => {
                    let diagnostic = self.diagnostic(err);
                    self.recover(diagnostic.span.start);
                    self.diagnostics.push(diagnostic);
                }
            }
        }
    }

    /// `EXPLAIN [PLAN FOR] [detail, ...] statement`.
    fn parse_explain(&mut self) -> Result<StatementKind, ParserError> {
        self.expect_word("EXPLAIN")?;
        self.parse_words(&["PLAN", "FOR"]);
        let mut details = Vec::new();
        while let Some(word) = self.peek_word() {
            if !matches!(
                word.as_str(),
                "ESTIMATED_COST" | "CHANGELOG_MODE" | "JSON_EXECUTION_PLAN" | "PLAN_ADVICE"
            ) {
                break;
            }
            self.parser.next_token();
            details.push(word);
            let _ = self.parser.consume_token(&Token::Comma);
        }
        let start = self.peek_start();
        let statement = if self.parse_words(&["STATEMENT", "SET"]) {
            let set = self.parse_statement_set_body(StatementSetSyntax::ExecuteBegin)?;
            self.finish_statement(StatementKind::StatementSet(Box::new(set)), start)
        } else {
            self.parse_statement(true)?
        };
        Ok(StatementKind::Explain(Box::new(Explain {
            details,
            statement: Box::new(statement),
        })))
    }

    /// A client statement kept as text: everything up to the next `;` (or end of input).
    fn parse_unparsed(&mut self, keyword_count: usize) -> Result<Unparsed, ParserError> {
        let start = self.peek_start();
        let mut keywords = Vec::new();
        for n in 0..keyword_count {
            match self.peek_nth_word(n) {
                Some(word) => keywords.push(word),
                None => break,
            }
        }
        // `SHOW CREATE TABLE`, `ALTER MATERIALIZED TABLE`: a third word names the object.
        if keywords.len() == 2 && matches!(keywords[1].as_str(), "CREATE" | "MATERIALIZED") {
            if let Some(word) = self.peek_nth_word(2) {
                keywords.push(word);
            }
        }
        while !self.at_statement_end() {
            self.parser.next_token();
        }
        let text = self.source_text(self.span_from(start)).to_string();
        Ok(Unparsed {
            keywords: keywords.join(" "),
            text,
        })
    }

    // ---------------------------------------------------------------- helpers

    /// `(a, b, c)`.
    fn parse_ident_list(&mut self) -> Result<Vec<Ident>, ParserError> {
        self.parser.expect_token(&Token::LParen)?;
        let idents = self
            .parser
            .parse_comma_separated(Parser::parse_identifier)?;
        self.parser.expect_token(&Token::RParen)?;
        Ok(idents)
    }

    /// The upper-cased text of the next token if it is an unquoted word.
    fn peek_word(&self) -> Option<String> {
        self.peek_nth_word(0)
    }

    fn peek_nth_word(&self, n: usize) -> Option<String> {
        match &self.parser.peek_nth_token_ref(n).token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    /// True if the next tokens are exactly the (unquoted) `words`.
    fn peek_words(&self, words: &[&str]) -> bool {
        words
            .iter()
            .enumerate()
            .all(|(n, w)| self.peek_nth_word(n).is_some_and(|p| p == *w))
    }

    /// Consumes `word` if it is next.
    fn parse_word(&mut self, word: &str) -> bool {
        self.parse_words(&[word])
    }

    /// Consumes `words` if they are all next.
    fn parse_words(&mut self, words: &[&str]) -> bool {
        if !self.peek_words(words) {
            return false;
        }
        for _ in words {
            self.parser.next_token();
        }
        true
    }

    fn expect_word(&mut self, word: &str) -> Result<(), ParserError> {
        self.expect_words(&[word])
    }

    fn expect_words(&mut self, words: &[&str]) -> Result<(), ParserError> {
        for word in words {
            if !self.parse_word(word) {
                return self.expected(word);
            }
        }
        Ok(())
    }

    fn expected<T>(&self, what: &str) -> Result<T, ParserError> {
        self.parser.expected(what, self.parser.peek_token())
    }

    /// True at `;` or the end of input.
    fn at_statement_end(&self) -> bool {
        matches!(
            self.parser.peek_token_ref().token,
            Token::SemiColon | Token::EOF
        )
    }

    /// Start of the next token (end of input if none).
    fn peek_start(&self) -> SqlLocation {
        let tok = self.parser.peek_token_ref();
        if tok.token == Token::EOF {
            self.end_of_input()
        } else {
            tok.span.start
        }
    }

    /// End of the last consumed non-whitespace token.
    fn last_end(&self) -> SqlLocation {
        let index = self.parser.index().min(self.tokens.len());
        self.tokens[..index]
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::Whitespace(_)))
            .map_or(SqlLocation::new(1, 1), |t| t.span.end)
    }

    /// End of the last non-whitespace token of the input.
    fn end_of_input(&self) -> SqlLocation {
        self.tokens
            .iter()
            .rev()
            .find(|t| !matches!(t.token, Token::Whitespace(_)))
            .map_or(SqlLocation::new(1, 1), |t| t.span.end)
    }

    /// The span from `start` to the end of the last consumed token.
    fn span_from(&self, start: SqlLocation) -> Span {
        let end = self.last_end();
        let start = location(start);
        Span::new(start, location(end).max(start))
    }

    fn source_text(&self, span: Span) -> &'a str {
        self.sql.get(span.byte_range(self.sql)).unwrap_or_default()
    }

    /// Skips past the first `;` at or after `from` (or to the end of input).
    fn recover(&mut self, from: Location) {
        let target = self
            .tokens
            .iter()
            .position(|t| t.token == Token::SemiColon && location(t.span.start) >= from)
            .map_or(self.tokens.len(), |i| i + 1);
        while self.parser.index() > target {
            self.parser.prev_token();
        }
        while self.parser.index() < target {
            self.parser.next_token_no_skip();
        }
    }

    /// Turns a sqlparser error into a located diagnostic.
    fn diagnostic(&self, err: ParserError) -> Diagnostic {
        let fallback = self.peek_start();
        error_to_diagnostic(&err, &self.tokens, location(fallback))
    }
}

/// Records a primary key, rejecting a second one as Flink does.
fn set_primary_key(
    table: &mut CreateTable,
    pk: PrimaryKey,
    at: SqlLocation,
) -> Result<(), ParserError> {
    if table.primary_key.is_some() {
        return Err(error_at("Duplicate primary key definition", at));
    }
    table.primary_key = Some(pk);
    Ok(())
}

/// Converts a sqlparser error into a diagnostic located at the offending token (`fallback` when
/// the error carries no position, e.g. the recursion limit).
pub(crate) fn error_to_diagnostic(
    err: &ParserError,
    tokens: &[TokenWithSpan],
    fallback: Location,
) -> Diagnostic {
    let raw = match err {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => {
            "SQL nests too deeply (recursion limit exceeded)".to_string()
        }
    };
    let (message, loc) = split_location(&raw);
    let loc = loc.filter(|l| l.line > 0).unwrap_or(fallback);
    let loc = if loc.line == 0 {
        Location::new(1, 1)
    } else {
        loc
    };
    let span = offending_token(tokens, loc, found_text(message)).unwrap_or(Span::new(loc, loc));
    Diagnostic::error(PARSE_ERROR, readable_message(message), span)
}

/// The span of the token an error is about: the token at `loc`, or, when the message names a
/// different token that sqlparser had already consumed (`SELECT FROM`), the nearest such token
/// just before `loc`.
fn offending_token(tokens: &[TokenWithSpan], loc: Location, found: Option<&str>) -> Option<Span> {
    let solid = |t: &&TokenWithSpan| !matches!(t.token, Token::Whitespace(_));
    let span_of = |t: &TokenWithSpan| Span::new(location(t.span.start), location(t.span.end));
    let at = tokens
        .iter()
        .position(|t| location(t.span.start) >= loc && !matches!(t.token, Token::Whitespace(_)));
    let here = at
        .and_then(|i| tokens.get(i))
        .filter(|t| location(t.span.start) == loc);
    if let Some(found) = found {
        let matches = |t: &TokenWithSpan| t.token.to_string().eq_ignore_ascii_case(found);
        if !here.is_some_and(matches) {
            let before = &tokens[..at.unwrap_or(tokens.len())];
            if let Some(t) = before
                .iter()
                .rev()
                .filter(solid)
                .take(3)
                .find(|t| matches(t))
            {
                return Some(span_of(t));
            }
        }
    }
    here.map(span_of)
}

/// The `found: X` part of a sqlparser message.
fn found_text(message: &str) -> Option<&str> {
    message
        .rsplit_once(", found: ")
        .map(|(_, found)| found.trim())
}

/// Splits sqlparser's " at Line: l, Column: c" suffix off a message.
fn split_location(message: &str) -> (&str, Option<Location>) {
    let Some(at) = message.rfind(" at Line: ") else {
        return (message, None);
    };
    let rest = &message[at + " at Line: ".len()..];
    let mut parts = rest.split(", Column: ");
    let line = parts.next().and_then(|l| l.trim().parse::<u64>().ok());
    let column = parts.next().and_then(|c| c.trim().parse::<u64>().ok());
    match (line, column) {
        (Some(line), Some(column)) => (&message[..at], Some(Location::new(line, column))),
        _ => (message, None),
    }
}

/// Rewrites sqlparser's "Expected: X, found: Y" as "expected X, found `Y`".
fn readable_message(message: &str) -> String {
    let message = message.trim();
    if let Some(rest) = message
        .strip_prefix("Expected: ")
        .or_else(|| message.strip_prefix("Expected "))
    {
        if let Some((expected, found)) = rest.rsplit_once(", found: ") {
            let found = if found == "EOF" {
                "end of input".to_string()
            } else {
                format!("`{found}`")
            };
            return format!("expected {expected}, found {found}");
        }
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_readable() {
        assert_eq!(
            readable_message("Expected: an expression, found: EOF"),
            "expected an expression, found end of input"
        );
        assert_eq!(
            readable_message("Expected: ), found: ;"),
            "expected ), found `;`"
        );
        let (m, loc) = split_location("Expected: x, found: y at Line: 3, Column: 14");
        assert_eq!(
            (m, loc),
            ("Expected: x, found: y", Some(Location::new(3, 14)))
        );
    }
}
