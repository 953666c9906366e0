//! Java `ScalarFunction`s: one call site per (function, argument types).

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use jni::objects::{GlobalRef, JObject, JValue};

use crate::columns;
use crate::vm::{jvm, resolve_call, with_env};
use crate::{JvmError, Result};

/// A Java `ScalarFunction` instance with the `eval` overload Flink's rules choose for the SQL
/// argument types. It is opened before its first call and closed when dropped.
pub struct JavaScalarFunction {
    name: String,
    class: String,
    call: GlobalRef,
    result_type: String,
}

impl std::fmt::Debug for JavaScalarFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JavaScalarFunction")
            .field("name", &self.name)
            .field("class", &self.class)
            .field("result_type", &self.result_type)
            .finish()
    }
}

impl JavaScalarFunction {
    /// Loads `class` from `jars` (or the class path) for SQL argument types `arg_types` (Flink
    /// type strings such as `INT`, `DECIMAL(10, 2)`); `name` is the SQL name used in errors.
    pub fn resolve(name: &str, class: &str, jars: &[String], arg_types: &[String]) -> Result<Self> {
        let context = || format!("Java function '{name}' ({class})");
        let (call, result_type) = resolve_call(
            &context,
            "scalar",
            "riffle/jvm/ScalarCall",
            class,
            jars,
            arg_types,
        )?;
        Ok(Self {
            name: name.to_string(),
            class: class.to_string(),
            call,
            result_type,
        })
    }

    /// The SQL type of the result (Flink type string, e.g. `STRING`, `INT NOT NULL`).
    pub fn result_type(&self) -> &str {
        &self.result_type
    }

    /// Calls the function on `rows` rows of argument columns; the result has type `result`
    /// (the Arrow form of [`Self::result_type`]).
    pub fn eval(&self, args: &[ArrayRef], rows: usize, result: &DataType) -> Result<ArrayRef> {
        for a in args {
            if !columns::supported(a.data_type()) {
                return Err(self.error(columns::unsupported(a.data_type())));
            }
        }
        if !columns::supported(result) {
            return Err(self.error(columns::unsupported(result)));
        }
        let context = || format!("Java function '{}' ({}) failed", self.name, self.class);
        with_env(&context, |env| {
            let encoded =
                env.new_object_array(args.len() as i32, "java/lang/Object", JObject::null())?;
            for (i, a) in args.iter().enumerate() {
                let column = columns::to_java(env, a.as_ref())?;
                env.set_object_array_element(&encoded, i as i32, column)?;
            }
            let out = env
                .call_method(
                    self.call.as_obj(),
                    "eval",
                    "(I[Ljava/lang/Object;)[Ljava/lang/Object;",
                    &[JValue::Int(rows as i32), JValue::Object(&encoded)],
                )?
                .l()?;
            columns::from_java(env, &out, result, rows)
        })
    }

    fn error(&self, message: String) -> JvmError {
        JvmError::new(format!(
            "Java function '{}' ({}): {message}",
            self.name, self.class
        ))
    }
}

impl Drop for JavaScalarFunction {
    fn drop(&mut self) {
        if jvm().is_ok() {
            // A failing close() cannot fail the finished job; it is reported on stderr.
            let context = || format!("Java function '{}' ({}) close()", self.name, self.class);
            if let Err(e) = with_env(&context, |env| {
                env.call_method(self.call.as_obj(), "close", "()V", &[])?;
                Ok(())
            }) {
                eprintln!("riffle: {e}");
            }
        }
    }
}
