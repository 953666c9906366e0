package org.apache.flink.table.annotation;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** The SQL type of a parameter, result or field, as a type string ({@code "DECIMAL(10, 2)"}). */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.FIELD, ElementType.PARAMETER})
public @interface DataTypeHint {
    /** The type string; empty when only other attributes are given. */
    String value() default "";

    /** A group of accepted input types. */
    InputGroup inputGroup() default InputGroup.UNKNOWN;

    /** Precision of BigDecimal values without a type string. */
    int defaultDecimalPrecision() default -1;

    /** Scale of BigDecimal values without a type string. */
    int defaultDecimalScale() default -1;
}
