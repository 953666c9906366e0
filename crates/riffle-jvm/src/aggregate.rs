//! Java `AggregateFunction`s: one call site per (function, argument types), one accumulator
//! object per group.

use std::sync::Mutex;

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use jni::objects::{GlobalRef, JObject, JValue};

use crate::columns;
use crate::vm::{jvm, resolve_call, with_env};
use crate::{JvmError, Result};

/// A Java `AggregateFunction` instance with the `accumulate`/`retract` overloads Flink's rules
/// choose for the SQL argument types. Opened before its first accumulator, closed when dropped.
pub struct JavaAggregateFunction {
    name: String,
    class: String,
    call: GlobalRef,
    result_type: String,
    /// The argument columns last decoded on the Java side (kept alive so that their identity
    /// tells whether a row belongs to the prepared batch).
    prepared: Mutex<Vec<ArrayRef>>,
}

/// The accumulator of one group: a Java object of the function's accumulator class.
#[derive(Clone)]
pub struct JavaAccumulator(GlobalRef);

impl std::fmt::Debug for JavaAccumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JavaAccumulator")
    }
}

impl std::fmt::Debug for JavaAggregateFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JavaAggregateFunction")
            .field("name", &self.name)
            .field("class", &self.class)
            .field("result_type", &self.result_type)
            .finish()
    }
}

impl JavaAggregateFunction {
    /// Loads `class` from `jars` for SQL argument types `arg_types` (Flink type strings); `name`
    /// is the SQL name used in errors.
    pub fn resolve(name: &str, class: &str, jars: &[String], arg_types: &[String]) -> Result<Self> {
        let context = || format!("Java aggregate function '{name}' ({class})");
        let (call, result_type) = resolve_call(
            &context,
            "aggregate",
            "riffle/jvm/AggregateCall",
            class,
            jars,
            arg_types,
        )?;
        Ok(Self {
            name: name.to_string(),
            class: class.to_string(),
            call,
            result_type,
            prepared: Mutex::new(Vec::new()),
        })
    }

    /// The SQL type of the result (Flink type string).
    pub fn result_type(&self) -> &str {
        &self.result_type
    }

    fn context(&self, what: &str) -> impl Fn() -> String + '_ {
        let what = what.to_string();
        move || {
            format!(
                "Java aggregate function '{}' ({}) {what} failed",
                self.name, self.class
            )
        }
    }

    /// A new accumulator (`createAccumulator`).
    pub fn create_accumulator(&self) -> Result<JavaAccumulator> {
        with_env(&self.context("createAccumulator"), |env| {
            let acc = env
                .call_method(
                    self.call.as_obj(),
                    "createAccumulator",
                    "()Ljava/lang/Object;",
                    &[],
                )?
                .l()?;
            env.new_global_ref(acc)
        })
        .map(JavaAccumulator)
    }

    /// Applies row `row` of the argument columns `args` to `acc`: `accumulate`, or `retract`
    /// when `add` is false. The columns cross to Java once per batch.
    pub fn update(
        &self,
        acc: &JavaAccumulator,
        args: &[ArrayRef],
        row: usize,
        add: bool,
    ) -> Result<()> {
        for a in args {
            if !columns::supported(a.data_type()) {
                return Err(JvmError::new(format!(
                    "Java aggregate function '{}' ({}): {}",
                    self.name,
                    self.class,
                    columns::unsupported(a.data_type())
                )));
            }
        }
        let mut prepared = match self.prepared.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        let same = prepared.len() == args.len()
            && prepared
                .iter()
                .zip(args)
                .all(|(p, a)| std::sync::Arc::ptr_eq(p, a));
        with_env(&self.context("accumulate"), |env| {
            if !same || args.is_empty() {
                let rows = args.first().map_or(row + 1, |a| a.len());
                let encoded =
                    env.new_object_array(args.len() as i32, "java/lang/Object", JObject::null())?;
                for (i, a) in args.iter().enumerate() {
                    let column = columns::to_java(env, a.as_ref())?;
                    env.set_object_array_element(&encoded, i as i32, column)?;
                }
                env.call_method(
                    self.call.as_obj(),
                    "prepare",
                    "(I[Ljava/lang/Object;)V",
                    &[JValue::Int(rows as i32), JValue::Object(&encoded)],
                )?;
            }
            env.call_method(
                self.call.as_obj(),
                "update",
                "(Ljava/lang/Object;IZ)V",
                &[
                    JValue::Object(acc.0.as_obj()),
                    JValue::Int(row as i32),
                    JValue::Bool(u8::from(add)),
                ],
            )?;
            Ok(())
        })?;
        *prepared = args.to_vec();
        Ok(())
    }

    /// The current result of `acc` (`getValue`) as a one-row array of type `result`.
    pub fn value(&self, acc: &JavaAccumulator, result: &DataType) -> Result<ArrayRef> {
        if !columns::supported(result) {
            return Err(JvmError::new(columns::unsupported(result)));
        }
        with_env(&self.context("getValue"), |env| {
            let out = env
                .call_method(
                    self.call.as_obj(),
                    "getValue",
                    "(Ljava/lang/Object;)[Ljava/lang/Object;",
                    &[JValue::Object(acc.0.as_obj())],
                )?
                .l()?;
            columns::from_java(env, &out, result, 1)
        })
    }

    /// Merges `other` into `acc` (`merge`).
    pub fn merge(&self, acc: &JavaAccumulator, other: &JavaAccumulator) -> Result<()> {
        with_env(&self.context("merge"), |env| {
            env.call_method(
                self.call.as_obj(),
                "merge",
                "(Ljava/lang/Object;Ljava/lang/Object;)V",
                &[
                    JValue::Object(acc.0.as_obj()),
                    JValue::Object(other.0.as_obj()),
                ],
            )?;
            Ok(())
        })
    }
}

impl Drop for JavaAggregateFunction {
    fn drop(&mut self) {
        if jvm().is_ok() {
            let context = self.context("close");
            if let Err(e) = with_env(&context, |env| {
                env.call_method(self.call.as_obj(), "close", "()V", &[])?;
                Ok(())
            }) {
                eprintln!("riffle: {e}");
            }
        }
    }
}
