package riffle.jvm;

import java.util.Collections;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.UserDefinedFunction;

/** An instance of a user's function class and its open/close lifecycle. */
final class FunctionInstance {
    final String className;
    final UserDefinedFunction instance;
    private final ClassLoader loader;
    private boolean opened;

    FunctionInstance(ClassLoader loader, String className) throws Exception {
        Class<?> cls;
        try {
            cls = Class.forName(className, true, loader);
        } catch (ClassNotFoundException e) {
            throw new IllegalArgumentException("class " + className + " not found in the function's jars or class path");
        }
        if (!UserDefinedFunction.class.isAssignableFrom(cls)) {
            throw new IllegalArgumentException("class " + className + " is not a Flink user-defined function");
        }
        this.className = className;
        this.instance = (UserDefinedFunction) cls.getDeclaredConstructor().newInstance();
        this.loader = loader;
    }

    /** Opens the function before its first call. */
    void open() throws Exception {
        if (!opened) {
            opened = true;
            instance.open(new FunctionContext(loader, Collections.emptyMap()));
        }
    }

    /** Closes the function if it was opened. */
    void close() throws Exception {
        if (opened) {
            opened = false;
            instance.close();
        }
    }
}
