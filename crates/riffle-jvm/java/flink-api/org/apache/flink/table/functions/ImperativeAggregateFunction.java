package org.apache.flink.table.functions;

/** Base of aggregate functions that keep their state in an accumulator object. */
public abstract class ImperativeAggregateFunction<T, ACC> extends UserDefinedFunction {
    /** A new, empty accumulator. */
    public abstract ACC createAccumulator();
}
