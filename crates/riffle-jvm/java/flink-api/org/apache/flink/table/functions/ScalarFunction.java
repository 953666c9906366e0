package org.apache.flink.table.functions;

/** A function mapping scalar values to one scalar value through its public {@code eval} methods. */
public abstract class ScalarFunction extends UserDefinedFunction {}
