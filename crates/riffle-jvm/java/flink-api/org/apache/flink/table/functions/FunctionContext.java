package org.apache.flink.table.functions;

import java.util.Map;

/** What a function sees of its job in {@code open}: its class loader and the job parameters. */
public class FunctionContext {
    private final ClassLoader userCodeClassLoader;
    private final Map<String, String> jobParameters;

    /** A context over the function's class loader and the job's parameters. */
    public FunctionContext(ClassLoader userCodeClassLoader, Map<String, String> jobParameters) {
        this.userCodeClassLoader = userCodeClassLoader;
        this.jobParameters = jobParameters;
    }

    /** The value of a global job parameter, or {@code defaultValue}. */
    public String getJobParameter(String key, String defaultValue) {
        String value = jobParameters.get(key);
        return value == null ? defaultValue : value;
    }

    /** The class loader of the function's jar. */
    public ClassLoader getUserCodeClassLoader() {
        return userCodeClassLoader;
    }
}
