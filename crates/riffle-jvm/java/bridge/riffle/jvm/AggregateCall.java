package riffle.jvm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.Collections;
import java.util.List;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.AggregateFunction;

/**
 * One call site of a Java {@code AggregateFunction}: the {@code accumulate} (and {@code retract})
 * overloads chosen for the argument types, {@code getValue}, {@code merge}. The runtime keeps one
 * accumulator object per group; a batch's argument columns are decoded once ({@link #prepare}),
 * then rows are applied one by one.
 */
public final class AggregateCall {
    private final FunctionInstance function;
    private final AggregateFunction<?, ?> aggregate;
    private final SqlType[] args;
    private final Signature accumulate;
    private final Signature retract;
    private final Method getValue;
    private final Method merge;
    private final SqlType result;
    private Object[][] batch = new Object[0][];

    AggregateCall(FunctionInstance function, SqlType[] args) {
        if (!(function.instance instanceof AggregateFunction)) {
            throw new IllegalArgumentException("class " + function.className + " is not an AggregateFunction");
        }
        this.function = function;
        this.aggregate = (AggregateFunction<?, ?>) function.instance;
        this.args = args;
        Class<?> cls = function.instance.getClass();
        StringBuilder problems = new StringBuilder();
        this.accumulate = Signature.choose(Signature.of(cls, "accumulate", 1, problems), args,
                function.className + ".accumulate", problems);
        List<Signature> retracts = Signature.of(cls, "retract", 1, new StringBuilder());
        Signature r = null;
        for (Signature s : retracts) if (s.accepts(args, true)) { r = s; break; }
        if (r == null) for (Signature s : retracts) if (s.accepts(args, false)) { r = s; break; }
        this.retract = r;
        this.getValue = find(cls, "getValue", 1);
        this.merge = find(cls, "merge", 2);
        if (getValue == null) {
            throw new IllegalArgumentException("class " + function.className + " has no public getValue method");
        }
        this.result = resultType(cls, getValue);
    }

    private static Method find(Class<?> cls, String name, int params) {
        Method found = null;
        for (Method m : cls.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == params) {
                // Prefer the user's method over the compiler's erased bridge.
                if (found == null || found.isBridge()) found = m;
            }
        }
        return found;
    }

    private SqlType resultType(Class<?> cls, Method getValue) {
        DataTypeHint h = getValue.getAnnotation(DataTypeHint.class);
        FunctionHint fh = cls.getAnnotation(FunctionHint.class);
        if ((h == null || Signature.isEmpty(h)) && fh != null && !Signature.isEmpty(fh.output())) h = fh.output();
        if ((h == null || Signature.isEmpty(h)) && fh == null) {
            FunctionHint mh = accumulate.method.getAnnotation(FunctionHint.class);
            if (mh != null && !Signature.isEmpty(mh.output())) h = mh.output();
        }
        Class<?> c = getValue.getReturnType();
        if (c == Object.class) c = resultClassOf(cls);
        return Signature.typeOf(h, c);
    }

    /** The class bound to {@code T} of {@code AggregateFunction<T, ACC>} along the superclasses. */
    private static Class<?> resultClassOf(Class<?> cls) {
        for (Class<?> c = cls; c != null && c != Object.class; c = c.getSuperclass()) {
            Type sup = c.getGenericSuperclass();
            if (sup instanceof ParameterizedType
                    && ((ParameterizedType) sup).getRawType() == AggregateFunction.class) {
                Type t = ((ParameterizedType) sup).getActualTypeArguments()[0];
                if (t instanceof Class) return (Class<?>) t;
            }
        }
        return Object.class;
    }

    /** The SQL type of the result, as Flink prints it. */
    public String resultType() {
        return result.toString();
    }

    /** Whether the function can retract rows (has a matching {@code retract} method). */
    public boolean hasRetract() {
        return retract != null;
    }

    /** A new accumulator (the function is opened first). */
    public synchronized Object createAccumulator() throws Throwable {
        function.open();
        return aggregate.createAccumulator();
    }

    /** Decodes the argument columns of the batch whose rows follow. */
    public synchronized void prepare(int rows, Object[] columns) {
        batch = new Object[args.length][];
        for (int i = 0; i < args.length; i++) batch[i] = Columns.decode((Object[]) columns[i], args[i], rows);
    }

    /** Applies row {@code row} of the prepared batch: {@code accumulate}, or {@code retract} when {@code add} is false. */
    public synchronized void update(Object acc, int row, boolean add) throws Throwable {
        Signature s = add ? accumulate : retract;
        if (s == null) {
            throw new UnsupportedOperationException("class " + function.className
                    + " has no retract method, which its input (an updating stream) needs");
        }
        Object[] a = s.javaArgs(new Object[] {acc}, batch, args, row);
        if (a == null || s.nullToPrimitive(a)) return;
        invoke(s.method, a);
    }

    /** The accumulator's current result, as a one-row column. */
    public synchronized Object[] getValue(Object acc) throws Throwable {
        return Columns.encode(new Object[] {invoke(getValue, new Object[] {acc})}, result);
    }

    /** Merges {@code other} into {@code acc} ({@code merge(acc, Iterable)}). */
    public synchronized void merge(Object acc, Object other) throws Throwable {
        if (merge == null) {
            throw new UnsupportedOperationException("class " + function.className
                    + " has no merge method, which merging (session) windows need");
        }
        invoke(merge, new Object[] {acc, Collections.singletonList(other)});
    }

    private Object invoke(Method m, Object[] a) throws Throwable {
        try {
            return m.invoke(function.instance, a);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** Calls {@code close} if the function was opened. */
    public synchronized void close() throws Exception {
        function.close();
    }
}
