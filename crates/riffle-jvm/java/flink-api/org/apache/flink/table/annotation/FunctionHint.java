package org.apache.flink.table.annotation;

import java.lang.annotation.ElementType;
import java.lang.annotation.Repeatable;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/** Input, accumulator and output types of a function's signature(s). */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Repeatable(FunctionHints.class)
public @interface FunctionHint {
    /** Types of the arguments. */
    DataTypeHint[] input() default @DataTypeHint();

    /** Whether the last input type repeats. */
    boolean isVarArgs() default false;

    /** Type of an aggregate function's accumulator. */
    DataTypeHint accumulator() default @DataTypeHint();

    /** Type of the result. */
    DataTypeHint output() default @DataTypeHint();
}
