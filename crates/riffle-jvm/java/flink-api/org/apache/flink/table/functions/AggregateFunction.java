package org.apache.flink.table.functions;

/**
 * An aggregate function: {@code accumulate} (and optionally {@code retract}, {@code merge})
 * methods update an accumulator, {@link #getValue} reads the result from it.
 */
public abstract class AggregateFunction<T, ACC> extends ImperativeAggregateFunction<T, ACC> {
    /** The current result of an accumulator. */
    public abstract T getValue(ACC accumulator);
}
