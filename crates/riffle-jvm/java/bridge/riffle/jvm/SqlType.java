package riffle.jvm;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;

/** A SQL type as Flink prints it ({@code DECIMAL(10, 2) NOT NULL}), reduced to what the bridge needs. */
final class SqlType {
    /** Type root: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, STRING, BYTES, DATE, TIMESTAMP, TIMESTAMP_LTZ, NULL, ANY. */
    final String root;
    final int precision;
    final int scale;
    final boolean nullable;

    SqlType(String root, int precision, int scale, boolean nullable) {
        this.root = root;
        this.precision = precision;
        this.scale = scale;
        this.nullable = nullable;
    }

    /** Parses a Flink type string; throws for types the bridge cannot carry. */
    static SqlType parse(String text) {
        String t = text.trim().toUpperCase();
        boolean nullable = true;
        if (t.endsWith(" NOT NULL")) {
            nullable = false;
            t = t.substring(0, t.length() - " NOT NULL".length()).trim();
        } else if (t.endsWith(" NULL")) {
            t = t.substring(0, t.length() - " NULL".length()).trim();
        }
        String root = t;
        int[] args = new int[0];
        int open = t.indexOf('(');
        if (open >= 0 && t.endsWith(")")) {
            root = t.substring(0, open).trim();
            String[] parts = t.substring(open + 1, t.length() - 1).split(",");
            args = new int[parts.length];
            for (int i = 0; i < parts.length; i++) {
                args[i] = Integer.parseInt(parts[i].trim());
            }
        }
        if (root.endsWith("WITH LOCAL TIME ZONE")) {
            root = "TIMESTAMP_LTZ";
        } else if (root.startsWith("TIMESTAMP") && root.contains("WITHOUT TIME ZONE")) {
            root = "TIMESTAMP";
        }
        switch (root) {
            case "BOOLEAN": case "TINYINT": case "SMALLINT": case "INT": case "BIGINT":
            case "FLOAT": case "DOUBLE": case "DATE": case "NULL":
                return new SqlType(root, 0, 0, nullable);
            case "INTEGER":
                return new SqlType("INT", 0, 0, nullable);
            case "REAL":
                return new SqlType("FLOAT", 0, 0, nullable);
            case "CHAR": case "VARCHAR": case "STRING":
                return new SqlType("STRING", 0, 0, nullable);
            case "BINARY": case "VARBINARY": case "BYTES":
                return new SqlType("BYTES", 0, 0, nullable);
            case "DECIMAL": case "DEC": case "NUMERIC":
                return new SqlType("DECIMAL", args.length > 0 ? args[0] : 10, args.length > 1 ? args[1] : 0, nullable);
            case "TIMESTAMP": case "TIMESTAMP_LTZ":
                return new SqlType(root, args.length > 0 ? args[0] : 6, 0, nullable);
            default:
                throw new IllegalArgumentException("type " + text + " is not supported for Java functions in Riffle");
        }
    }

    /** The type Flink extracts for a Java class without hints, or null when Flink needs a hint. */
    static SqlType ofClass(Class<?> c) {
        if (c == boolean.class) return new SqlType("BOOLEAN", 0, 0, false);
        if (c == byte.class) return new SqlType("TINYINT", 0, 0, false);
        if (c == short.class) return new SqlType("SMALLINT", 0, 0, false);
        if (c == int.class) return new SqlType("INT", 0, 0, false);
        if (c == long.class) return new SqlType("BIGINT", 0, 0, false);
        if (c == float.class) return new SqlType("FLOAT", 0, 0, false);
        if (c == double.class) return new SqlType("DOUBLE", 0, 0, false);
        if (c == Boolean.class) return new SqlType("BOOLEAN", 0, 0, true);
        if (c == Byte.class) return new SqlType("TINYINT", 0, 0, true);
        if (c == Short.class) return new SqlType("SMALLINT", 0, 0, true);
        if (c == Integer.class) return new SqlType("INT", 0, 0, true);
        if (c == Long.class) return new SqlType("BIGINT", 0, 0, true);
        if (c == Float.class) return new SqlType("FLOAT", 0, 0, true);
        if (c == Double.class) return new SqlType("DOUBLE", 0, 0, true);
        if (c == String.class) return new SqlType("STRING", 0, 0, true);
        if (c == byte[].class) return new SqlType("BYTES", 0, 0, true);
        if (c == LocalDate.class) return new SqlType("DATE", 0, 0, true);
        if (c == LocalDateTime.class) return new SqlType("TIMESTAMP", 9, 0, true);
        if (c == Instant.class) return new SqlType("TIMESTAMP_LTZ", 9, 0, true);
        return null;
    }

    /** Whether a value of type {@code from} can be passed where this type is expected (Flink's implicit casts). */
    boolean accepts(SqlType from) {
        if (root.equals("ANY")) return true;
        // A nullable argument never reaches a NOT NULL (primitive) parameter.
        if (!nullable && from.nullable) return false;
        if (from.root.equals("NULL")) return true;
        if (root.equals(from.root)) return true;
        int target = numericRank(root);
        int source = numericRank(from.root);
        if (target >= 0 && source >= 0) return source < target;
        return root.equals("TIMESTAMP") && from.root.equals("DATE");
    }

    /** Whether this type is {@code from} without any cast (nullability and precision aside). */
    boolean matchesExactly(SqlType from) {
        return root.equals(from.root) && (nullable || !from.nullable);
    }

    private static int numericRank(String root) {
        switch (root) {
            case "TINYINT": return 0;
            case "SMALLINT": return 1;
            case "INT": return 2;
            case "BIGINT": return 3;
            case "DECIMAL": return 4;
            case "FLOAT": return 5;
            case "DOUBLE": return 6;
            default: return -1;
        }
    }

    /** Converts a value of type {@code from} (as the bridge decoded it) to this type's Java form. */
    Object coerce(Object v, SqlType from) {
        if (v == null || root.equals(from.root) || root.equals("ANY")) return v;
        switch (root) {
            case "SMALLINT": return ((Number) v).shortValue();
            case "INT": return ((Number) v).intValue();
            case "BIGINT": return ((Number) v).longValue();
            case "FLOAT": return ((Number) v).floatValue();
            case "DOUBLE": return ((Number) v).doubleValue();
            case "DECIMAL":
                return v instanceof BigDecimal ? v : BigDecimal.valueOf(((Number) v).longValue());
            case "TIMESTAMP": return ((LocalDate) v).atStartOfDay();
            default: return v;
        }
    }

    /** The type as Flink prints it. */
    @Override
    public String toString() {
        String base;
        switch (root) {
            case "DECIMAL": base = "DECIMAL(" + precision + ", " + scale + ")"; break;
            case "TIMESTAMP": base = "TIMESTAMP(" + precision + ")"; break;
            case "TIMESTAMP_LTZ": base = "TIMESTAMP_LTZ(" + precision + ")"; break;
            default: base = root;
        }
        return nullable ? base : base + " NOT NULL";
    }
}
