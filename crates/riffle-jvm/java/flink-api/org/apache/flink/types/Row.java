package org.apache.flink.types;

import java.util.Arrays;

/** A row of field values, as table functions emit for ROW results. */
public final class Row implements java.io.Serializable {
    private final Object[] fields;

    /** A row of {@code arity} NULL fields. */
    public Row(int arity) {
        this.fields = new Object[arity];
    }

    /** A row of the given values. */
    public static Row of(Object... values) {
        Row row = new Row(values.length);
        System.arraycopy(values, 0, row.fields, 0, values.length);
        return row;
    }

    /** Number of fields. */
    public int getArity() {
        return fields.length;
    }

    /** The value at {@code pos}. */
    public Object getField(int pos) {
        return fields[pos];
    }

    /** Sets the value at {@code pos}. */
    public void setField(int pos, Object value) {
        fields[pos] = value;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Row && Arrays.deepEquals(fields, ((Row) o).fields);
    }

    @Override
    public int hashCode() {
        return Arrays.deepHashCode(fields);
    }

    @Override
    public String toString() {
        return "+I" + Arrays.deepToString(fields);
    }
}
