package riffle.jvm;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * Columns as they cross JNI: {@code Object[] { boolean[] nulls (or null), payload... }} with one
 * primitive array per payload, so a whole column crosses in a few calls. Payloads by type root:
 * BOOLEAN boolean[]; TINYINT byte[]; SMALLINT short[]; INT int[]; BIGINT long[]; FLOAT float[];
 * DOUBLE double[]; DATE int[] (days since epoch); DECIMAL byte[] (16 little-endian bytes per
 * unscaled value); STRING, BYTES byte[] data and int[] offsets (rows + 1); TIMESTAMP,
 * TIMESTAMP_LTZ long[] epoch seconds and int[] nanoseconds.
 */
final class Columns {
    private Columns() {}

    /** The Java values of an encoded column. */
    static Object[] decode(Object[] column, SqlType type, int rows) {
        boolean[] nulls = (boolean[]) column[0];
        Object[] out = new Object[rows];
        for (int i = 0; i < rows; i++) {
            if (nulls != null && nulls[i]) continue;
            out[i] = value(column, type, i);
        }
        return out;
    }

    private static Object value(Object[] c, SqlType type, int i) {
        switch (type.root) {
            case "BOOLEAN": return ((boolean[]) c[1])[i];
            case "TINYINT": return ((byte[]) c[1])[i];
            case "SMALLINT": return ((short[]) c[1])[i];
            case "INT": return ((int[]) c[1])[i];
            case "BIGINT": return ((long[]) c[1])[i];
            case "FLOAT": return ((float[]) c[1])[i];
            case "DOUBLE": return ((double[]) c[1])[i];
            case "DATE": return LocalDate.ofEpochDay(((int[]) c[1])[i]);
            case "DECIMAL": {
                byte[] all = (byte[]) c[1];
                byte[] be = new byte[16];
                for (int k = 0; k < 16; k++) be[k] = all[i * 16 + 15 - k];
                return new BigDecimal(new BigInteger(be), type.scale);
            }
            case "STRING": case "BYTES": {
                byte[] data = (byte[]) c[1];
                int[] offsets = (int[]) c[2];
                int from = offsets[i];
                int len = offsets[i + 1] - from;
                if (type.root.equals("STRING")) return new String(data, from, len, StandardCharsets.UTF_8);
                byte[] b = new byte[len];
                System.arraycopy(data, from, b, 0, len);
                return b;
            }
            case "TIMESTAMP": {
                long s = ((long[]) c[1])[i];
                int n = ((int[]) c[2])[i];
                return LocalDateTime.ofEpochSecond(s, n, ZoneOffset.UTC);
            }
            case "TIMESTAMP_LTZ":
                return Instant.ofEpochSecond(((long[]) c[1])[i], ((int[]) c[2])[i]);
            default:
                throw new IllegalArgumentException("cannot pass " + type + " to Java");
        }
    }

    /** Encodes Java values (already checked to be of the type's class) as a column. */
    static Object[] encode(Object[] values, SqlType type) {
        int n = values.length;
        boolean[] nulls = new boolean[n];
        for (int i = 0; i < n; i++) nulls[i] = values[i] == null;
        switch (type.root) {
            case "BOOLEAN": {
                boolean[] a = new boolean[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = (Boolean) values[i];
                return new Object[] {nulls, a};
            }
            case "TINYINT": {
                byte[] a = new byte[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = ((Number) values[i]).byteValue();
                return new Object[] {nulls, a};
            }
            case "SMALLINT": {
                short[] a = new short[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = ((Number) values[i]).shortValue();
                return new Object[] {nulls, a};
            }
            case "INT": {
                int[] a = new int[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = ((Number) values[i]).intValue();
                return new Object[] {nulls, a};
            }
            case "BIGINT": {
                long[] a = new long[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = ((Number) values[i]).longValue();
                return new Object[] {nulls, a};
            }
            case "FLOAT": {
                float[] a = new float[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = ((Number) values[i]).floatValue();
                return new Object[] {nulls, a};
            }
            case "DOUBLE": {
                double[] a = new double[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = ((Number) values[i]).doubleValue();
                return new Object[] {nulls, a};
            }
            case "DATE": {
                int[] a = new int[n];
                for (int i = 0; i < n; i++) if (values[i] != null) a[i] = (int) ((LocalDate) values[i]).toEpochDay();
                return new Object[] {nulls, a};
            }
            case "DECIMAL": {
                byte[] a = new byte[16 * n];
                for (int i = 0; i < n; i++) {
                    if (values[i] == null) continue;
                    BigDecimal d = ((BigDecimal) values[i]).setScale(type.scale, java.math.RoundingMode.HALF_UP);
                    if (d.precision() > type.precision) {
                        // Flink turns a value that does not fit the declared precision into NULL.
                        nulls[i] = true;
                        continue;
                    }
                    byte[] be = d.unscaledValue().toByteArray();
                    byte sign = (byte) (d.signum() < 0 ? -1 : 0);
                    for (int k = 0; k < 16; k++) {
                        int src = be.length - 1 - k;
                        a[i * 16 + k] = src >= 0 ? be[src] : sign;
                    }
                }
                return new Object[] {nulls, a};
            }
            case "STRING": case "BYTES": {
                byte[][] parts = new byte[n][];
                int total = 0;
                for (int i = 0; i < n; i++) {
                    if (values[i] == null) continue;
                    parts[i] = type.root.equals("STRING")
                            ? ((String) values[i]).getBytes(StandardCharsets.UTF_8)
                            : (byte[]) values[i];
                    total += parts[i].length;
                }
                byte[] data = new byte[total];
                int[] offsets = new int[n + 1];
                int at = 0;
                for (int i = 0; i < n; i++) {
                    offsets[i] = at;
                    if (parts[i] != null) {
                        System.arraycopy(parts[i], 0, data, at, parts[i].length);
                        at += parts[i].length;
                    }
                }
                offsets[n] = at;
                return new Object[] {nulls, data, offsets};
            }
            case "TIMESTAMP": case "TIMESTAMP_LTZ": {
                long[] secs = new long[n];
                int[] nanos = new int[n];
                for (int i = 0; i < n; i++) {
                    if (values[i] == null) continue;
                    Instant t = values[i] instanceof Instant
                            ? (Instant) values[i]
                            : ((LocalDateTime) values[i]).toInstant(ZoneOffset.UTC);
                    secs[i] = t.getEpochSecond();
                    nanos[i] = t.getNano();
                }
                return new Object[] {nulls, secs, nanos};
            }
            default:
                throw new IllegalArgumentException("cannot return " + type + " from Java");
        }
    }
}
