package riffle.jvm;

import java.lang.reflect.InvocationTargetException;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.functions.ScalarFunction;

/** One call site of a Java {@code ScalarFunction}: its instance and the {@code eval} overload chosen for the argument types. */
public final class ScalarCall {
    private final FunctionInstance function;
    private final Signature signature;
    private final SqlType[] args;
    private final SqlType result;

    ScalarCall(FunctionInstance function, SqlType[] args) {
        if (!(function.instance instanceof ScalarFunction)) {
            throw new IllegalArgumentException("class " + function.className + " is not a ScalarFunction");
        }
        this.function = function;
        this.args = args;
        StringBuilder problems = new StringBuilder();
        Class<?> cls = function.instance.getClass();
        this.signature = Signature.choose(Signature.of(cls, "eval", 0, problems), args, function.className, problems);
        this.result = resultType(signature, cls);
    }

    /** The result type: a hint on the method or class, else the Java return type. */
    static SqlType resultType(Signature s, Class<?> cls) {
        DataTypeHint h = s.method.getAnnotation(DataTypeHint.class);
        FunctionHint fh = s.method.getAnnotation(FunctionHint.class);
        if (fh == null) fh = cls.getAnnotation(FunctionHint.class);
        if ((h == null || Signature.isEmpty(h)) && fh != null && !Signature.isEmpty(fh.output())) h = fh.output();
        return Signature.typeOf(h, s.method.getReturnType());
    }

    /** The SQL type of the result, as Flink prints it. */
    public String resultType() {
        return result.toString();
    }

    /** Calls {@code eval} once per row; the result column in the JNI encoding of {@link Columns}. */
    public synchronized Object[] eval(int rows, Object[] columns) throws Throwable {
        function.open();
        Object[][] values = new Object[args.length][];
        for (int i = 0; i < args.length; i++) values[i] = Columns.decode((Object[]) columns[i], args[i], rows);
        Object[] out = new Object[rows];
        Object[] none = new Object[0];
        for (int r = 0; r < rows; r++) {
            Object[] a = signature.javaArgs(none, values, args, r);
            if (a == null || signature.nullToPrimitive(a)) continue;
            try {
                out[r] = signature.method.invoke(function.instance, a);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
        return Columns.encode(out, result);
    }

    /** Calls {@code close} if the function was opened. */
    public synchronized void close() throws Exception {
        function.close();
    }
}
