package riffle.jvm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.TableFunction;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

/**
 * One call site of a Java {@code TableFunction}: its instance, the {@code eval} overload chosen
 * for the argument types and the columns of the rows it emits with {@code collect}.
 */
public final class TableCall {
    private final FunctionInstance function;
    private final Signature signature;
    private final SqlType[] args;
    /** Output column names and types: a ROW's fields, or one column {@code EXPR$0} of an atomic type (as Flink names it). */
    private final String[] names;
    private final SqlType[] types;
    /** The function emits {@link Row}s (ROW output) rather than atomic values. */
    private final boolean rows;
    /** Per collected row, the input row it came from, and its values (filled during {@link #eval}). */
    private final List<Integer> owners = new ArrayList<>();
    private final List<Object[]> collected = new ArrayList<>();
    private int current;

    @SuppressWarnings("unchecked")
    TableCall(FunctionInstance function, SqlType[] args) {
        if (!(function.instance instanceof TableFunction)) {
            throw new IllegalArgumentException("class " + function.className + " is not a TableFunction");
        }
        this.function = function;
        this.args = args;
        StringBuilder problems = new StringBuilder();
        Class<?> cls = function.instance.getClass();
        this.signature = Signature.choose(Signature.of(cls, "eval", 0, problems), args, function.className, problems);
        String output = outputHint(signature, cls);
        if (output == null) {
            Class<?> c = outputClassOf(cls);
            if (c == Row.class || c == Object.class) {
                throw new IllegalArgumentException("class " + function.className
                        + " needs a @FunctionHint(output = @DataTypeHint(\"ROW<...>\")) for its output type");
            }
            output = Signature.typeOf(null, c).toString();
        }
        String upper = output.trim().toUpperCase();
        if (upper.startsWith("ROW<") || upper.startsWith("ROW(")) {
            List<String[]> fields = rowFields(output.trim());
            names = new String[fields.size()];
            types = new SqlType[fields.size()];
            for (int i = 0; i < fields.size(); i++) {
                names[i] = fields.get(i)[0];
                types[i] = SqlType.parse(fields.get(i)[1]);
            }
            rows = true;
        } else {
            names = new String[] {"EXPR$0"};
            types = new SqlType[] {SqlType.parse(output)};
            rows = false;
        }
        ((TableFunction<Object>) function.instance).setCollector(new Collector<Object>() {
            @Override
            public void collect(Object record) {
                owners.add(current);
                collected.add(values(record));
            }

            @Override
            public void close() {}
        });
    }

    /** The output type from a hint on the method or the class (null: none). */
    private static String outputHint(Signature s, Class<?> cls) {
        FunctionHint fh = s.method.getAnnotation(FunctionHint.class);
        if (fh == null || Signature.isEmpty(fh.output())) fh = cls.getAnnotation(FunctionHint.class);
        if (fh != null && !Signature.isEmpty(fh.output())) return fh.output().value();
        DataTypeHint h = cls.getAnnotation(DataTypeHint.class);
        if (h != null && !h.value().isEmpty()) return h.value();
        return null;
    }

    /** The class bound to {@code T} of {@code TableFunction<T>} along the superclasses. */
    private static Class<?> outputClassOf(Class<?> cls) {
        for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
            Type sup = c.getGenericSuperclass();
            if (sup instanceof ParameterizedType
                    && ((ParameterizedType) sup).getRawType() == TableFunction.class) {
                Type t = ((ParameterizedType) sup).getActualTypeArguments()[0];
                if (t instanceof Class) return (Class<?>) t;
            }
        }
        return Object.class;
    }

    /** {@code [name, type]} of each field of {@code ROW<a INT, b STRING>} (or {@code ROW(...)}). */
    static List<String[]> rowFields(String row) {
        String body = row.substring(4, row.length() - 1);
        List<String[]> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i <= body.length(); i++) {
            char ch = i < body.length() ? body.charAt(i) : ',';
            if (ch == '<' || ch == '(') depth++;
            if (ch == '>' || ch == ')') depth--;
            if (ch == ',' && depth == 0) {
                String field = body.substring(start, i).trim();
                start = i + 1;
                if (field.isEmpty()) continue;
                String name;
                String type;
                if (field.startsWith("`")) {
                    int end = field.indexOf('`', 1);
                    name = field.substring(1, end);
                    type = field.substring(end + 1).trim();
                } else {
                    int space = field.indexOf(' ');
                    if (space < 0) throw new IllegalArgumentException("ROW field without a type: " + field);
                    name = field.substring(0, space);
                    type = field.substring(space + 1).trim();
                }
                out.add(new String[] {name, type});
            }
        }
        return out;
    }

    private Object[] values(Object record) {
        Object[] out = new Object[names.length];
        if (!rows) {
            out[0] = record;
        } else if (record instanceof Row) {
            Row r = (Row) record;
            for (int i = 0; i < out.length && i < r.getArity(); i++) out[i] = r.getField(i);
        } else if (record != null) {
            throw new IllegalArgumentException("table function " + function.className
                    + " emitted a " + record.getClass().getName() + " where its ROW output needs a Row");
        }
        return out;
    }

    /** The output row type, as {@code ROW<`name` TYPE, ...>}. */
    public String resultType() {
        StringBuilder b = new StringBuilder("ROW<");
        for (int i = 0; i < names.length; i++) {
            if (i > 0) b.append(", ");
            b.append('`').append(names[i].replace("`", "``")).append("` ").append(types[i]);
        }
        return b.append('>').toString();
    }

    /**
     * Calls {@code eval} once per row. Returns the input row of every emitted row (an
     * {@code int[]}) followed by one column per output field, in the encoding of {@link Columns}.
     */
    public synchronized Object[] eval(int rowCount, Object[] columns) throws Throwable {
        function.open();
        Object[][] values = new Object[args.length][];
        for (int i = 0; i < args.length; i++) values[i] = Columns.decode((Object[]) columns[i], args[i], rowCount);
        owners.clear();
        collected.clear();
        Object[] none = new Object[0];
        for (int r = 0; r < rowCount; r++) {
            Object[] a = signature.javaArgs(none, values, args, r);
            if (a == null || signature.nullToPrimitive(a)) continue;
            current = r;
            try {
                signature.method.invoke(function.instance, a);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
        int n = owners.size();
        Object[] out = new Object[1 + names.length];
        int[] from = new int[n];
        for (int i = 0; i < n; i++) from[i] = owners.get(i);
        out[0] = from;
        for (int f = 0; f < names.length; f++) {
            Object[] column = new Object[n];
            for (int i = 0; i < n; i++) column[i] = collected.get(i)[f];
            out[1 + f] = Columns.encode(column, types[f]);
        }
        owners.clear();
        collected.clear();
        return out;
    }

    /** Calls {@code close} if the function was opened. */
    public synchronized void close() throws Exception {
        function.close();
    }
}
