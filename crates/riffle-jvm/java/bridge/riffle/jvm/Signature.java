package riffle.jvm;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.annotation.FunctionHint;
import org.apache.flink.table.annotation.InputGroup;

/**
 * One callable overload of a function method ({@code eval}, {@code accumulate}, ...): the SQL
 * type each parameter accepts, from {@code @DataTypeHint}, a method's {@code @FunctionHint}
 * input or the Java class as Flink's default extraction maps it.
 */
final class Signature {
    final Method method;
    /** Types of the SQL arguments (without a leading accumulator parameter). */
    final SqlType[] params;
    /** The last parameter is a Java varargs array. */
    final boolean varArgs;
    /** Number of leading Java parameters that are not SQL arguments (an accumulator). */
    final int skip;

    private Signature(Method method, SqlType[] params, boolean varArgs, int skip) {
        this.method = method;
        this.params = params;
        this.varArgs = varArgs;
        this.skip = skip;
    }

    /** Every public method {@code name} of {@code cls}; {@code skip} leading parameters are not SQL arguments. */
    static List<Signature> of(Class<?> cls, String name, int skip, StringBuilder problems) {
        List<Method> methods = new ArrayList<>();
        for (Method m : cls.getMethods()) {
            if (m.getName().equals(name) && !Modifier.isStatic(m.getModifiers()) && !m.isBridge()) {
                methods.add(m);
            }
        }
        // getMethods() has no defined order; Flink's choice among equally good overloads must
        // not depend on it.
        methods.sort(Comparator.comparing(Method::toGenericString));
        List<Signature> out = new ArrayList<>();
        for (Method m : methods) {
            try {
                out.add(extract(m, skip));
            } catch (IllegalArgumentException e) {
                problems.append("\n  ").append(m.toGenericString()).append(": ").append(e.getMessage());
            }
        }
        return out;
    }

    private static Signature extract(Method m, int skip) {
        Parameter[] ps = m.getParameters();
        if (ps.length < skip) throw new IllegalArgumentException("expects an accumulator parameter first");
        DataTypeHint[] hinted = null;
        FunctionHint fh = m.getAnnotation(FunctionHint.class);
        if (fh != null && fh.input().length > 0 && !(fh.input().length == 1 && isEmpty(fh.input()[0]))) {
            hinted = fh.input();
        }
        SqlType[] params = new SqlType[ps.length - skip];
        for (int i = skip; i < ps.length; i++) {
            DataTypeHint h = hinted != null && i - skip < hinted.length
                    ? hinted[i - skip]
                    : ps[i].getAnnotation(DataTypeHint.class);
            Class<?> c = ps[i].getType();
            if (m.isVarArgs() && i == ps.length - 1) c = c.getComponentType();
            params[i - skip] = typeOf(h, c);
        }
        boolean varArgs = m.isVarArgs() || (fh != null && fh.isVarArgs());
        return new Signature(m, params, varArgs, skip);
    }

    static boolean isEmpty(DataTypeHint h) {
        return h.value().isEmpty() && h.inputGroup() == InputGroup.UNKNOWN;
    }

    /** The SQL type of a value of class {@code c}, refined by an optional hint. */
    static SqlType typeOf(DataTypeHint hint, Class<?> c) {
        if (hint != null && hint.inputGroup() == InputGroup.ANY) return new SqlType("ANY", 0, 0, true);
        if (hint != null && !hint.value().isEmpty()) return SqlType.parse(hint.value());
        if (c == java.math.BigDecimal.class && hint != null && hint.defaultDecimalPrecision() > 0) {
            return new SqlType("DECIMAL", hint.defaultDecimalPrecision(), Math.max(hint.defaultDecimalScale(), 0), true);
        }
        SqlType t = SqlType.ofClass(c);
        if (t == null) {
            throw new IllegalArgumentException("no SQL type for Java class " + c.getName()
                    + " (Flink needs a @DataTypeHint for it)");
        }
        return t;
    }

    /** Whether this overload takes arguments of the given types (with implicit casts). */
    boolean accepts(SqlType[] args, boolean exactly) {
        int fixed = varArgs ? params.length - 1 : params.length;
        if (varArgs ? args.length < fixed : args.length != fixed) return false;
        for (int i = 0; i < args.length; i++) {
            SqlType p = params[Math.min(i, params.length - 1)];
            if (exactly ? !(p.matchesExactly(args[i]) || p.root.equals("ANY")) : !p.accepts(args[i])) {
                return false;
            }
        }
        return true;
    }

    /** The overload Flink calls for {@code args}: an exact match first, else one reached by implicit casts. */
    static Signature choose(List<Signature> sigs, SqlType[] args, String what, StringBuilder problems) {
        for (Signature s : sigs) if (s.accepts(args, true)) return s;
        for (Signature s : sigs) if (s.accepts(args, false)) return s;
        StringBuilder msg = new StringBuilder("Invalid input arguments ")
                .append(Arrays.toString(args)).append(" for ").append(what).append(". Expected signatures are:");
        for (Signature s : sigs) msg.append("\n  ").append(s);
        if (sigs.isEmpty()) msg.append(" none");
        msg.append(problems);
        throw new IllegalArgumentException(msg.toString());
    }

    /** The Java arguments of one call: values coerced to the parameter types, varargs packed. */
    Object[] javaArgs(Object[] leading, Object[][] columns, SqlType[] args, int row) {
        Object[] out = new Object[skip + (varArgs ? params.length : args.length)];
        System.arraycopy(leading, 0, out, 0, skip);
        int fixed = varArgs ? params.length - 1 : params.length;
        for (int i = 0; i < fixed; i++) {
            out[skip + i] = params[i].coerce(columns[i][row], args[i]);
        }
        if (varArgs) {
            Class<?> component = method.getParameterTypes()[method.getParameterCount() - 1].getComponentType();
            Object rest = java.lang.reflect.Array.newInstance(component, args.length - fixed);
            SqlType p = params[params.length - 1];
            for (int i = fixed; i < args.length; i++) {
                Object v = p.coerce(columns[i][row], args[i]);
                if (v == null && component.isPrimitive()) return null;
                java.lang.reflect.Array.set(rest, i - fixed, v);
            }
            out[skip + fixed] = rest;
        }
        return out;
    }

    /** Whether a NULL argument reaches a primitive parameter (then the call is skipped). */
    boolean nullToPrimitive(Object[] javaArgs) {
        Class<?>[] types = method.getParameterTypes();
        for (int i = 0; i < javaArgs.length && i < types.length; i++) {
            if (javaArgs[i] == null && types[i].isPrimitive()) return true;
        }
        return false;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder(method.getName()).append("(");
        for (int i = 0; i < params.length; i++) {
            if (i > 0) b.append(", ");
            b.append(params[i]);
            if (varArgs && i == params.length - 1) b.append("...");
        }
        return b.append(")").toString();
    }
}
