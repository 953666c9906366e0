package riffle.jvm;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Entry points Riffle's Rust side calls through JNI. */
public final class Bridge {
    private static final Map<String, ClassLoader> LOADERS = new ConcurrentHashMap<>();

    private Bridge() {}

    /** A class loader over the jars (one per distinct list), the system class path as parent. */
    public static ClassLoader loader(String[] jars) throws Exception {
        String key = String.join("\n", jars);
        ClassLoader found = LOADERS.get(key);
        if (found != null) return found;
        URL[] urls = new URL[jars.length];
        for (int i = 0; i < jars.length; i++) {
            String j = jars[i];
            if (j.contains("://")) {
                urls[i] = new URL(j);
            } else {
                File f = new File(j);
                if (!f.isFile()) throw new IllegalArgumentException("jar " + j + " not found");
                urls[i] = f.toURI().toURL();
            }
        }
        ClassLoader loader = new URLClassLoader(urls, Bridge.class.getClassLoader());
        LOADERS.put(key, loader);
        return loader;
    }

    /** A scalar function call site for arguments of the given SQL types. */
    public static ScalarCall scalar(ClassLoader loader, String className, String[] argTypes) throws Exception {
        return new ScalarCall(new FunctionInstance(loader, className), types(argTypes));
    }

    /** An aggregate function call site for arguments of the given SQL types. */
    public static AggregateCall aggregate(ClassLoader loader, String className, String[] argTypes) throws Exception {
        return new AggregateCall(new FunctionInstance(loader, className), types(argTypes));
    }

    /** A table function call site for arguments of the given SQL types. */
    public static TableCall table(ClassLoader loader, String className, String[] argTypes) throws Exception {
        return new TableCall(new FunctionInstance(loader, className), types(argTypes));
    }

    /** What kind of function a class is: {@code scalar}, {@code table}, {@code aggregate} or {@code other}. */
    public static String kind(ClassLoader loader, String className) throws Exception {
        Class<?> cls;
        try {
            cls = Class.forName(className, false, loader);
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("class " + className + " not found in the function's jars or class path");
        }
        if (org.apache.flink.table.functions.ScalarFunction.class.isAssignableFrom(cls)) return "scalar";
        if (org.apache.flink.table.functions.TableFunction.class.isAssignableFrom(cls)) return "table";
        if (org.apache.flink.table.functions.AggregateFunction.class.isAssignableFrom(cls)) return "aggregate";
        return "other";
    }

    static SqlType[] types(String[] names) {
        SqlType[] out = new SqlType[names.length];
        for (int i = 0; i < names.length; i++) out[i] = SqlType.parse(names[i]);
        return out;
    }

    /** A Java exception as a job error: class and message of it and its causes, then the user's frames. */
    public static String describe(Throwable t) {
        StringBuilder b = new StringBuilder(String.valueOf(t));
        for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            b.append("\ncaused by: ").append(c);
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().startsWith("riffle.jvm.") || e.getClassName().startsWith("jdk.internal.")
                    || e.getClassName().startsWith("java.lang.reflect.")) {
                break;
            }
            b.append("\n  at ").append(e);
        }
        return b.toString();
    }
}
