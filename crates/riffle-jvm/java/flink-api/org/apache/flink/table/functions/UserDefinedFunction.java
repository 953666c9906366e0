package org.apache.flink.table.functions;

/**
 * Riffle's stand-in for Flink's base class of user-defined functions: the part of the API a
 * function written for Flink calls at run time (lifecycle methods). Type inference is done by
 * Riffle's bridge from the {@code eval} signatures and hints, as Flink's default extraction does.
 */
public abstract class UserDefinedFunction implements java.io.Serializable {
    /** Called once before the first call. */
    public void open(FunctionContext context) throws Exception {}

    /** Called once after the last call. */
    public void close() throws Exception {}

    /** Whether calls with equal arguments give equal results. */
    public boolean isDeterministic() {
        return true;
    }

    @Override
    public String toString() {
        return getClass().getName();
    }
}
