//! Flink data types: parsing from sqlparser tokens and printing in Flink's summary form.
//!
//! sqlparser has no hook for data types, so Riffle parses them itself from the token stream of a
//! sqlparser [`Parser`]; DDL columns, `CAST`/`TRY_CAST` targets and [`crate::parse_data_type`] all use
//! [`parse_type`]. Printing follows Flink's `LogicalType#asSummaryString`: `STRING` for
//! `VARCHAR(2147483647)`, `BYTES` for `VARBINARY(2147483647)`, `` ROW<`a` INT> `` and a trailing
//! `NOT NULL`.

use std::fmt;

use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location as SqlLocation, Token};

use crate::ast::{DataType, RowField, TypeKind, MAX_LENGTH};

/// Deepest nesting of `ROW`/`ARRAY`/`MAP`/... accepted; deeper input is rejected, not overflowed.
const MAX_TYPE_DEPTH: usize = 50;

/// Default precision of `TIMESTAMP` and `TIMESTAMP_LTZ` in Flink SQL.
const DEFAULT_TIMESTAMP_PRECISION: u8 = 6;

/// Words that end a type rather than name a user-defined one (`c COMMENT 'x'` lacks a type).
const NOT_A_TYPE_NAME: &[&str] = &[
    "AND",
    "AS",
    "BY",
    "CASE",
    "CHECK",
    "COMMENT",
    "CONSTRAINT",
    "CREATE",
    "DEFAULT",
    "ELSE",
    "END",
    "FOR",
    "FROM",
    "GROUP",
    "HAVING",
    "INSERT",
    "INTO",
    "JOIN",
    "KEY",
    "LIKE",
    "METADATA",
    "NOT",
    "ON",
    "OR",
    "ORDER",
    "PARTITIONED",
    "PRIMARY",
    "SELECT",
    "SET",
    "TABLE",
    "THEN",
    "TO",
    "UNION",
    "UNIQUE",
    "VALUES",
    "VIRTUAL",
    "WATERMARK",
    "WHEN",
    "WHERE",
    "WITH",
];

/// Builds a parser error at `loc`, formatted like sqlparser's own (" at Line: l, Column: c").
pub(crate) fn error_at(message: impl fmt::Display, loc: SqlLocation) -> ParserError {
    ParserError::ParserError(format!("{message}{loc}"))
}

/// Parses one Flink data type (with nullability and `ARRAY`/`MULTISET` suffixes) at the parser's
/// current position.
pub(crate) fn parse_type(parser: &mut Parser) -> Result<DataType, ParserError> {
    let mut p = TypeParser {
        parser,
        pending_gt: 0,
    };
    let data_type = p.parse(0)?;
    if p.pending_gt > 0 {
        let tok = p.parser.peek_token();
        return Err(error_at("Unbalanced '>' in data type", tok.span.start));
    }
    Ok(data_type)
}

/// A recursive-descent type parser over a sqlparser token stream.
struct TypeParser<'p, 'a> {
    parser: &'p mut Parser<'a>,
    /// `>` characters still owed from a consumed `>>` token (`ARRAY<ARRAY<INT>>`).
    pending_gt: u32,
}

impl TypeParser<'_, '_> {
    fn parse(&mut self, depth: usize) -> Result<DataType, ParserError> {
        if depth > MAX_TYPE_DEPTH {
            let loc = self.parser.peek_token_ref().span.start;
            return Err(error_at(
                format!("Data type nests deeper than {MAX_TYPE_DEPTH} levels"),
                loc,
            ));
        }
        let mut data_type = DataType::nullable(self.parse_base(depth)?);
        // Suffixes: `NOT NULL`, `NULL`, `ARRAY`, `MULTISET`, in any order Flink accepts
        // (`INT NOT NULL ARRAY NOT NULL`). A pending `>` means the enclosing type ends here.
        while self.pending_gt == 0 {
            if self.parser.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
                data_type.nullable = false;
            } else if self.peek_nullable_suffix() {
                self.parser.next_token();
                data_type.nullable = true;
            } else if self.parser.parse_keyword(Keyword::ARRAY) {
                data_type = DataType::nullable(TypeKind::Array(Box::new(data_type)));
            } else if self.parser.parse_keyword(Keyword::MULTISET) {
                data_type = DataType::nullable(TypeKind::Multiset(Box::new(data_type)));
            } else {
                break;
            }
        }
        Ok(data_type)
    }

    /// An explicit `NULL` after a type, but not the `NULL ON EMPTY` clause of `JSON_VALUE(...
    /// RETURNING DOUBLE NULL ON EMPTY)`.
    fn peek_nullable_suffix(&self) -> bool {
        let [null, on] = self.parser.peek_tokens::<2>();
        matches!(null, Token::Word(w) if w.keyword == Keyword::NULL)
            && !matches!(on, Token::Word(w) if w.keyword == Keyword::ON)
    }

    fn parse_base(&mut self, depth: usize) -> Result<TypeKind, ParserError> {
        let tok = self.parser.next_token();
        let word = match &tok.token {
            Token::Word(w) => w.clone(),
            _ => return self.parser.expected("a data type", tok),
        };
        if word.quote_style.is_some() {
            return Ok(TypeKind::Unknown(self.finish_user_type(word.value)?));
        }
        let name = word.value.to_ascii_uppercase();
        let kind = match name.as_str() {
            "STRING" => TypeKind::Varchar(MAX_LENGTH),
            "BYTES" => TypeKind::Varbinary(MAX_LENGTH),
            "CHAR" | "CHARACTER" => {
                if self.parser.parse_keyword(Keyword::VARYING) {
                    TypeKind::Varchar(self.length(MAX_LENGTH)?)
                } else {
                    TypeKind::Char(self.length(1)?)
                }
            }
            // Flink's type system gives an unsized VARCHAR/VARBINARY the maximum length.
            "VARCHAR" => TypeKind::Varchar(self.length(MAX_LENGTH)?),
            "BINARY" => {
                if self.parser.parse_keyword(Keyword::VARYING) {
                    TypeKind::Varbinary(self.length(MAX_LENGTH)?)
                } else {
                    TypeKind::Binary(self.length(1)?)
                }
            }
            "VARBINARY" => TypeKind::Varbinary(self.length(MAX_LENGTH)?),
            "BOOLEAN" => TypeKind::Boolean,
            "TINYINT" => TypeKind::TinyInt,
            "SMALLINT" => TypeKind::SmallInt,
            "INT" | "INTEGER" => TypeKind::Int,
            "BIGINT" => TypeKind::BigInt,
            "FLOAT" | "REAL" => TypeKind::Float,
            "DOUBLE" => {
                let _ = self.parser.parse_keyword(Keyword::PRECISION);
                TypeKind::Double
            }
            "DECIMAL" | "DEC" | "NUMERIC" => self.decimal()?,
            "DATE" => TypeKind::Date,
            "TIME" => {
                let p = self.precision(0, 9)?;
                if self
                    .parser
                    .parse_keywords(&[Keyword::WITH, Keyword::TIME, Keyword::ZONE])
                    || self.parser.parse_keywords(&[
                        Keyword::WITH,
                        Keyword::LOCAL,
                        Keyword::TIME,
                        Keyword::ZONE,
                    ])
                {
                    return Err(error_at(
                        "TIME WITH TIME ZONE is not supported by Flink",
                        tok.span.start,
                    ));
                }
                let _ =
                    self.parser
                        .parse_keywords(&[Keyword::WITHOUT, Keyword::TIME, Keyword::ZONE]);
                TypeKind::Time(p)
            }
            "TIMESTAMP" => {
                let p = self.precision(DEFAULT_TIMESTAMP_PRECISION, 9)?;
                if self.parser.parse_keywords(&[
                    Keyword::WITH,
                    Keyword::LOCAL,
                    Keyword::TIME,
                    Keyword::ZONE,
                ]) {
                    TypeKind::TimestampLtz(p)
                } else if self
                    .parser
                    .parse_keywords(&[Keyword::WITH, Keyword::TIME, Keyword::ZONE])
                {
                    return Err(error_at(
                        "TIMESTAMP WITH TIME ZONE is not supported by Flink; use TIMESTAMP_LTZ",
                        tok.span.start,
                    ));
                } else {
                    let _ = self.parser.parse_keywords(&[
                        Keyword::WITHOUT,
                        Keyword::TIME,
                        Keyword::ZONE,
                    ]);
                    TypeKind::Timestamp(p)
                }
            }
            "TIMESTAMP_LTZ" => {
                TypeKind::TimestampLtz(self.precision(DEFAULT_TIMESTAMP_PRECISION, 9)?)
            }
            "INTERVAL" => self.interval()?,
            "ARRAY" => {
                let element = self.angle_element(depth)?;
                TypeKind::Array(Box::new(element))
            }
            "MULTISET" => {
                let element = self.angle_element(depth)?;
                TypeKind::Multiset(Box::new(element))
            }
            "MAP" => {
                self.parser.expect_token(&Token::Lt)?;
                let key = self.parse(depth + 1)?;
                self.parser.expect_token(&Token::Comma)?;
                let value = self.parse(depth + 1)?;
                self.expect_gt()?;
                TypeKind::Map(Box::new(key), Box::new(value))
            }
            "ROW" => self.row(depth)?,
            "RAW" => self.raw()?,
            "NULL" => TypeKind::Null,
            _ if NOT_A_TYPE_NAME.contains(&name.as_str()) => {
                return self.parser.expected("a data type", tok);
            }
            // Flink resolves other names as user-defined (structured/distinct) types later, at
            // validation; keep the name so analysis can report it.
            _ => TypeKind::Unknown(self.finish_user_type(word.value)?),
        };
        Ok(kind)
    }

    /// Completes a possibly dotted user-defined type name (`cat.db.MyType`).
    fn finish_user_type(&mut self, first: String) -> Result<String, ParserError> {
        let mut name = first;
        while self.parser.consume_token(&Token::Period) {
            let part = self.parser.parse_identifier()?;
            name.push('.');
            name.push_str(&part.value);
        }
        Ok(name)
    }

    /// `<T>` after `ARRAY` or `MULTISET`.
    fn angle_element(&mut self, depth: usize) -> Result<DataType, ParserError> {
        self.parser.expect_token(&Token::Lt)?;
        let element = self.parse(depth + 1)?;
        self.expect_gt()?;
        Ok(element)
    }

    /// Consumes one `>`, splitting `>>` when nested types close together.
    fn expect_gt(&mut self) -> Result<(), ParserError> {
        if self.pending_gt > 0 {
            self.pending_gt -= 1;
            return Ok(());
        }
        let tok = self.parser.next_token();
        match tok.token {
            Token::Gt => Ok(()),
            Token::ShiftRight => {
                self.pending_gt = 1;
                Ok(())
            }
            _ => self.parser.expected("'>'", tok),
        }
    }

    /// `ROW<name T ['desc'], ...>` or `ROW(name T ['desc'], ...)`.
    fn row(&mut self, depth: usize) -> Result<TypeKind, ParserError> {
        let tok = self.parser.next_token();
        let angle = match tok.token {
            Token::Lt => true,
            Token::LParen => false,
            // `ROW<>` tokenizes as the `<>` operator.
            Token::Neq => return Ok(TypeKind::Row(Vec::new())),
            _ => return self.parser.expected("'<' or '(' after ROW", tok),
        };
        let mut fields = Vec::new();
        let empty = if angle {
            self.parser.consume_token(&Token::Gt)
        } else {
            self.parser.consume_token(&Token::RParen)
        };
        if empty {
            return Ok(TypeKind::Row(fields));
        }
        loop {
            let name = self.parser.parse_identifier()?;
            let data_type = self.parse(depth + 1)?;
            let description = match self.parser.peek_token_ref().token {
                Token::SingleQuotedString(_) if self.pending_gt == 0 => {
                    Some(self.parser.parse_literal_string()?)
                }
                _ => None,
            };
            fields.push(RowField {
                name: name.value,
                data_type,
                description,
            });
            if self.pending_gt > 0 || !self.parser.consume_token(&Token::Comma) {
                break;
            }
        }
        if angle {
            self.expect_gt()?;
        } else {
            self.parser.expect_token(&Token::RParen)?;
        }
        Ok(TypeKind::Row(fields))
    }

    /// `RAW('class' [, 'snapshot'])`.
    fn raw(&mut self) -> Result<TypeKind, ParserError> {
        self.parser.expect_token(&Token::LParen)?;
        let class = self.parser.parse_literal_string()?;
        if self.parser.consume_token(&Token::Comma) {
            // The serializer snapshot only matters to the JVM; Riffle keeps the class name.
            self.parser.parse_literal_string()?;
        }
        self.parser.expect_token(&Token::RParen)?;
        Ok(TypeKind::Raw(class))
    }

    /// `DECIMAL [(p [, s])]` with Flink's defaults and bounds (1 <= p <= 38, 0 <= s <= p).
    fn decimal(&mut self) -> Result<TypeKind, ParserError> {
        if !self.parser.consume_token(&Token::LParen) {
            return Ok(TypeKind::Decimal(10, 0));
        }
        let p_tok = self.parser.peek_token();
        let precision = self.number()?;
        let scale = if self.parser.consume_token(&Token::Comma) {
            self.number()?
        } else {
            0
        };
        self.parser.expect_token(&Token::RParen)?;
        if !(1..=38).contains(&precision) {
            return Err(error_at(
                format!(
                    "Decimal precision must be between 1 and 38 (both inclusive), got {precision}"
                ),
                p_tok.span.start,
            ));
        }
        if scale > precision {
            return Err(error_at(
                format!("Decimal scale must be between 0 and the precision {precision} (both inclusive), got {scale}"),
                p_tok.span.start,
            ));
        }
        // Both were range-checked above (<= 38), so the narrowing cannot truncate.
        Ok(TypeKind::Decimal(precision as u8, scale as i8))
    }

    /// Optional `(n)` length of a character/binary string type (1 <= n <= 2147483647).
    fn length(&mut self, default: u32) -> Result<u32, ParserError> {
        if !self.parser.consume_token(&Token::LParen) {
            return Ok(default);
        }
        let tok = self.parser.peek_token();
        let n = self.number()?;
        self.parser.expect_token(&Token::RParen)?;
        if n == 0 || n > u64::from(MAX_LENGTH) {
            return Err(error_at(
                format!("Length must be between 1 and {MAX_LENGTH} (both inclusive), got {n}"),
                tok.span.start,
            ));
        }
        Ok(n as u32)
    }

    /// Optional `(p)` precision of a time type (0 <= p <= max).
    fn precision(&mut self, default: u8, max: u8) -> Result<u8, ParserError> {
        if !self.parser.consume_token(&Token::LParen) {
            return Ok(default);
        }
        let tok = self.parser.peek_token();
        let p = self.number()?;
        self.parser.expect_token(&Token::RParen)?;
        if p > u64::from(max) {
            return Err(error_at(
                format!("Precision must be between 0 and {max} (both inclusive), got {p}"),
                tok.span.start,
            ));
        }
        Ok(p as u8)
    }

    /// An unsigned integer literal.
    fn number(&mut self) -> Result<u64, ParserError> {
        let tok = self.parser.next_token();
        match &tok.token {
            Token::Number(text, _) => text.parse::<u64>().map_err(|_| {
                error_at(
                    format!("Invalid number '{text}' in data type"),
                    tok.span.start,
                )
            }),
            _ => self.parser.expected("an unsigned integer", tok),
        }
    }

    /// `INTERVAL YEAR [(p)] [TO MONTH]`, `INTERVAL DAY [(p)] TO SECOND [(p)]`, ...
    fn interval(&mut self) -> Result<TypeKind, ParserError> {
        let tok = self.parser.next_token();
        let leading = match &tok.token {
            Token::Word(w) => w.keyword,
            _ => Keyword::NoKeyword,
        };
        let year_month = match leading {
            Keyword::YEAR | Keyword::MONTH => true,
            Keyword::DAY | Keyword::HOUR | Keyword::MINUTE | Keyword::SECOND => false,
            _ => {
                return self.parser.expected(
                    "an interval unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND)",
                    tok,
                )
            }
        };
        self.precision(0, 9)?;
        if self.parser.parse_keyword(Keyword::TO) {
            let unit = self.parser.next_token();
            let unit_kw = match &unit.token {
                Token::Word(w) => w.keyword,
                _ => Keyword::NoKeyword,
            };
            let ok = if year_month {
                leading == Keyword::YEAR && unit_kw == Keyword::MONTH
            } else {
                matches!(unit_kw, Keyword::HOUR | Keyword::MINUTE | Keyword::SECOND)
            };
            if !ok {
                return self.parser.expected("a valid interval end unit", unit);
            }
            self.precision(0, 9)?;
        }
        Ok(if year_month {
            TypeKind::IntervalYearMonth
        } else {
            TypeKind::IntervalDayTime
        })
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if !self.nullable {
            f.write_str(" NOT NULL")?;
        }
        Ok(())
    }
}

impl fmt::Display for TypeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeKind::Char(n) => write!(f, "CHAR({n})"),
            TypeKind::Varchar(n) if *n == MAX_LENGTH => f.write_str("STRING"),
            TypeKind::Varchar(n) => write!(f, "VARCHAR({n})"),
            TypeKind::Boolean => f.write_str("BOOLEAN"),
            TypeKind::Binary(n) => write!(f, "BINARY({n})"),
            TypeKind::Varbinary(n) if *n == MAX_LENGTH => f.write_str("BYTES"),
            TypeKind::Varbinary(n) => write!(f, "VARBINARY({n})"),
            TypeKind::Decimal(p, s) => write!(f, "DECIMAL({p}, {s})"),
            TypeKind::TinyInt => f.write_str("TINYINT"),
            TypeKind::SmallInt => f.write_str("SMALLINT"),
            TypeKind::Int => f.write_str("INT"),
            TypeKind::BigInt => f.write_str("BIGINT"),
            TypeKind::Float => f.write_str("FLOAT"),
            TypeKind::Double => f.write_str("DOUBLE"),
            TypeKind::Date => f.write_str("DATE"),
            TypeKind::Time(p) => write!(f, "TIME({p})"),
            TypeKind::Timestamp(p) => write!(f, "TIMESTAMP({p})"),
            TypeKind::TimestampLtz(p) => write!(f, "TIMESTAMP_LTZ({p})"),
            TypeKind::IntervalYearMonth => f.write_str("INTERVAL YEAR TO MONTH"),
            TypeKind::IntervalDayTime => f.write_str("INTERVAL DAY TO SECOND"),
            TypeKind::Array(t) => write!(f, "ARRAY<{t}>"),
            TypeKind::Multiset(t) => write!(f, "MULTISET<{t}>"),
            TypeKind::Map(k, v) => write!(f, "MAP<{k}, {v}>"),
            TypeKind::Row(fields) => {
                f.write_str("ROW<")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{}` {}", field.name.replace('`', "``"), field.data_type)?;
                    if let Some(desc) = &field.description {
                        write!(f, " '{}'", desc.replace('\'', "''"))?;
                    }
                }
                f.write_str(">")
            }
            TypeKind::Raw(class) => write!(f, "RAW('{}', '...')", class.replace('\'', "''")),
            TypeKind::Null => f.write_str("NULL"),
            TypeKind::Unknown(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_data_type;

    /// Parses `text` and prints it back in Flink's summary form.
    fn summary(text: &str) -> String {
        match parse_data_type(text) {
            Ok(t) => t.to_string(),
            Err(d) => format!("error: {}", d.message),
        }
    }

    #[test]
    fn every_flink_type_parses_and_prints_as_flink_does() {
        let cases = [
            ("STRING", "STRING"),
            ("VARCHAR(2147483647)", "STRING"),
            ("VARCHAR", "STRING"),
            ("VARCHAR(10)", "VARCHAR(10)"),
            ("CHAR", "CHAR(1)"),
            ("CHAR(5) NOT NULL", "CHAR(5) NOT NULL"),
            ("CHARACTER VARYING(3)", "VARCHAR(3)"),
            ("BYTES", "BYTES"),
            ("BINARY", "BINARY(1)"),
            ("VARBINARY(8)", "VARBINARY(8)"),
            ("BOOLEAN", "BOOLEAN"),
            ("TINYINT", "TINYINT"),
            ("SMALLINT", "SMALLINT"),
            ("INTEGER", "INT"),
            ("int not null", "INT NOT NULL"),
            ("BIGINT NULL", "BIGINT"),
            ("FLOAT", "FLOAT"),
            ("REAL", "FLOAT"),
            ("DOUBLE PRECISION", "DOUBLE"),
            ("DECIMAL", "DECIMAL(10, 0)"),
            ("DEC(5)", "DECIMAL(5, 0)"),
            ("NUMERIC(10,2)", "DECIMAL(10, 2)"),
            ("DATE", "DATE"),
            ("TIME", "TIME(0)"),
            ("TIME(3) WITHOUT TIME ZONE", "TIME(3)"),
            ("TIMESTAMP", "TIMESTAMP(6)"),
            ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)"),
            ("TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(3)"),
            ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)"),
            ("TIMESTAMP WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP_LTZ(6) NOT NULL"),
            ("INTERVAL DAY(2) TO SECOND(3)", "INTERVAL DAY TO SECOND"),
            ("INTERVAL YEAR TO MONTH", "INTERVAL YEAR TO MONTH"),
            ("INTERVAL MINUTE", "INTERVAL DAY TO SECOND"),
            ("ROW<a INT, b STRING>", "ROW<`a` INT, `b` STRING>"),
            ("ROW(a INT, `b c` STRING 'desc')", "ROW<`a` INT, `b c` STRING 'desc'>"),
            ("ROW<>", "ROW<>"),
            ("ARRAY<INT NOT NULL>", "ARRAY<INT NOT NULL>"),
            ("INT ARRAY", "ARRAY<INT>"),
            ("INT NOT NULL ARRAY NOT NULL", "ARRAY<INT NOT NULL> NOT NULL"),
            ("MAP<STRING, ARRAY<MAP<INT, BIGINT>>>", "MAP<STRING, ARRAY<MAP<INT, BIGINT>>>"),
            ("MULTISET<STRING>", "MULTISET<STRING>"),
            ("STRING MULTISET", "MULTISET<STRING>"),
            ("RAW('java.lang.Object', 'AAA=')", "RAW('java.lang.Object', '...')"),
            ("NULL", "NULL"),
            ("cat.db.MyType", "cat.db.MyType"),
            ("TIMESTAMP(10)", "error: Precision must be between 0 and 9 (both inclusive), got 10"),
            ("COMMENT", "error: expected a data type, found `COMMENT`"),
            ("DECIMAL(5, 6)", "error: Decimal scale must be between 0 and the precision 5 (both inclusive), got 6"),
        ];
        for (input, expected) in cases {
            assert_eq!(summary(input), expected, "{input}");
        }
    }

    #[test]
    fn printed_types_parse_back_to_themselves() {
        for text in [
            "ROW<`a` INT NOT NULL, `b``c` MAP<STRING, BYTES> 'it''s'>",
            "ARRAY<TIMESTAMP_LTZ(3)> NOT NULL",
        ] {
            let parsed = parse_data_type(text);
            let printed = parsed.as_ref().map(ToString::to_string);
            assert_eq!(printed.as_deref(), Ok(text));
            assert_eq!(parse_data_type(text).ok(), parsed.ok());
        }
    }
}
