package org.apache.flink.table.functions;

import org.apache.flink.util.Collector;

/** A function mapping scalar values to rows, emitted with {@link #collect} from {@code eval}. */
public abstract class TableFunction<T> extends UserDefinedFunction {
    private Collector<T> collector;

    /** Where {@link #collect} sends rows (set by the runtime). */
    public final void setCollector(Collector<T> collector) {
        this.collector = collector;
    }

    /** Emits one output row. */
    protected final void collect(T row) {
        collector.collect(row);
    }

    /** Called after the last input row. */
    public void finish() throws Exception {}
}
