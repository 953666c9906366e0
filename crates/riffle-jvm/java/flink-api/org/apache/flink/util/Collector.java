package org.apache.flink.util;

/** Receives the records a function emits. */
public interface Collector<T> {
    /** Emits a record. */
    void collect(T record);

    /** Ends the stream of records. */
    void close();
}
