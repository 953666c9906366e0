//! Property tests: the parser never panics and every diagnostic is located, for random text,
//! random token soups drawn from a Flink SQL vocabulary, and mutations of valid statements.

use proptest::prelude::*;
use riffle_sql::{parse_data_type, parse_expr, parse_script, ParsedScript};

/// Valid statements the mutation strategy starts from.
const SEEDS: &[&str] = &[
    "CREATE TABLE t (id INT NOT NULL, ts TIMESTAMP(3), c AS id + 1, m STRING METADATA FROM 'k' VIRTUAL, \
     WATERMARK FOR ts AS ts - INTERVAL '5' SECONDS, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'kafka');",
    "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end;",
    "INSERT INTO s SELECT /*+ STATE_TTL('t' = '1d') */ a, CAST(b AS ROW<x INT, y ARRAY<STRING>>) FROM t /*+ OPTIONS('k'='v') */;",
    "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT * FROM t; INSERT INTO b SELECT 1; END;",
    "SELECT * FROM ticker MATCH_RECOGNIZE (PARTITION BY s ORDER BY ts MEASURES A.p AS p PATTERN (A B+) \
     WITHIN INTERVAL '1' HOUR DEFINE A AS A.p > 0) AS m;",
    "SET 'table.exec.state.ttl' = '1 h'; SET a.b-c = 10 s; RESET; BEGIN STATEMENT SET; INSERT INTO x VALUES (1); END;",
    "SELECT JSON_VALUE(s, '$.a' RETURNING INT DEFAULT 0 ON EMPTY), MAP['a', 1], a || b FROM t, LATERAL TABLE(f(a)) AS T(x);",
    "SELECT n BETWEEN SYMMETRIC 1 AND 2, s IS NOT JSON OBJECT, TRIM(LEADING FROM s), JSON_OBJECT(KEY 'a' VALUE 1 NULL ON NULL) FROM t;",
    "CREATE TABLE c WITH ('connector' = 'print') AS SELECT * FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '1' MINUTE));",
];

/// Tokens for the token-soup strategy.
const VOCABULARY: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "CREATE",
    "TABLE",
    "VIEW",
    "FUNCTION",
    "INSERT",
    "INTO",
    "OVERWRITE",
    "SET",
    "RESET",
    "EXECUTE",
    "STATEMENT",
    "BEGIN",
    "END",
    "EXPLAIN",
    "WITH",
    "AS",
    "WATERMARK",
    "FOR",
    "METADATA",
    "VIRTUAL",
    "PRIMARY",
    "KEY",
    "NOT",
    "ENFORCED",
    "NULL",
    "INT",
    "STRING",
    "ROW",
    "ARRAY",
    "MAP",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "DECIMAL",
    "INTERVAL",
    "MINUTES",
    "DAY",
    "TO",
    "HOUR",
    "CAST",
    "TRY_CAST",
    "TUMBLE",
    "HOP",
    "SESSION",
    "DESCRIPTOR",
    "PARTITION",
    "LATERAL",
    "UNNEST",
    "MATCH_RECOGNIZE",
    "PATTERN",
    "WITHIN",
    "DEFINE",
    "OVER",
    "JSON_VALUE",
    "RETURNING",
    "ON",
    "EMPTY",
    "ERROR",
    "DEFAULT",
    "LIKE",
    "INCLUDING",
    "ALL",
    "IS",
    "JSON",
    "BETWEEN",
    "SYMMETRIC",
    "AND",
    "TRIM",
    "LEADING",
    "JSON_OBJECT",
    "KEY",
    "VALUE",
    "ABSENT",
    "WRAPPER",
    "JSON_ARRAY",
    "TABLE(",
    "MAP[",
    "(",
    ")",
    "<",
    ">",
    ">>",
    "<>",
    ",",
    ";",
    ".",
    "=",
    "=>",
    "+",
    "-",
    "*",
    "||",
    "[",
    "]",
    "'k'",
    "'v'",
    "`c`",
    "1",
    "3.5",
    "t",
    "ts",
    "/*+ OPTIONS('a'='b') */",
    "/*+ BROADCAST(",
    "-- c\n",
    "'",
    "`",
    "\n",
];

/// Checks the invariants every parse result must hold.
fn check(parsed: &ParsedScript) {
    for d in &parsed.diagnostics {
        assert!(d.span.start.line >= 1, "unlocated diagnostic: {d:?}");
        assert!(d.span.start <= d.span.end, "inverted span: {d:?}");
    }
    for s in &parsed.script.statements {
        assert!(
            s.span.start.line >= 1 && s.span.start <= s.span.end,
            "bad statement span {:?}",
            s.span
        );
        for h in &s.hints {
            assert!(h.span.start.line >= 1);
        }
    }
}

fn check_all(text: &str) {
    check(&parse_script(text));
    if let Err(d) = parse_data_type(text) {
        assert!(d.span.start.line >= 1, "unlocated type diagnostic: {d:?}");
    }
    if let Err(d) = parse_expr(text) {
        assert!(
            d.span.start.line >= 1,
            "unlocated expression diagnostic: {d:?}"
        );
    }
}

/// One edit of a token list.
#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    DeleteChar(usize),
    InsertChar(usize, char),
}

fn apply(seed: &str, mutations: &[Mutation]) -> String {
    let mut tokens: Vec<String> = seed.split(' ').map(str::to_string).collect();
    for m in mutations {
        let n = tokens.len().max(1);
        match m {
            Mutation::Delete(i) if !tokens.is_empty() => {
                tokens.remove(i % n);
            }
            Mutation::Duplicate(i) if !tokens.is_empty() => {
                let t = tokens[i % n].clone();
                tokens.insert(i % n, t);
            }
            Mutation::Swap(i, j) if !tokens.is_empty() => tokens.swap(i % n, j % n),
            Mutation::DeleteChar(i) => {
                let mut chars: Vec<char> = tokens.join(" ").chars().collect();
                if !chars.is_empty() {
                    let at = i % chars.len();
                    chars.remove(at);
                }
                tokens = vec![chars.iter().collect()];
            }
            Mutation::InsertChar(i, c) => {
                let mut chars: Vec<char> = tokens.join(" ").chars().collect();
                let at = i % (chars.len() + 1);
                chars.insert(at, *c);
                tokens = vec![chars.iter().collect()];
            }
            _ => {}
        }
    }
    tokens.join(" ")
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Duplicate),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::Swap(i, j)),
        any::<usize>().prop_map(Mutation::DeleteChar),
        (
            any::<usize>(),
            prop::sample::select(vec![
                '(', ')', '\'', '`', ';', ',', '<', '>', '-', '/', '*', 'x', ' '
            ])
        )
            .prop_map(|(i, c)| Mutation::InsertChar(i, c)),
    ]
}

proptest! {
    // 1000 cases per property run in a few seconds in debug; set PROPTEST_CASES for longer hunts.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_text_never_panics(text in "\\PC{0,120}") {
        check_all(&text);
    }

    #[test]
    fn token_soup_never_panics(words in prop::collection::vec(prop::sample::select(VOCABULARY), 0..40)) {
        check_all(&words.join(" "));
    }

    #[test]
    fn mutated_statements_never_panic(
        seed in prop::sample::select(SEEDS),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        check_all(&apply(seed, &mutations));
    }
}

#[test]
fn seeds_are_valid() {
    for seed in SEEDS {
        let parsed = parse_script(seed);
        assert!(
            parsed.diagnostics.is_empty(),
            "{seed}: {:?}",
            parsed.diagnostics
        );
    }
}
