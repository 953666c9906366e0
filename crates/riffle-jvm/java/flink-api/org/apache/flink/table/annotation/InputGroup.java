package org.apache.flink.table.annotation;

/** Groups of input types a hint may accept instead of one type. */
public enum InputGroup {
    /** No group: the hint's type string applies. */
    UNKNOWN,
    /** Any type. */
    ANY
}
