//! Java `TableFunction`s: one call site per (function, argument types); each call of `eval`
//! emits zero or more rows through `collect`.

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use jni::objects::{GlobalRef, JIntArray, JObject, JObjectArray, JValue};

use crate::columns;
use crate::vm::{jvm, resolve_call, with_env};
use crate::{JvmError, Result};

/// A Java `TableFunction` instance with the `eval` overload Flink's rules choose for the SQL
/// argument types. Opened before its first call, closed when dropped.
pub struct JavaTableFunction {
    name: String,
    class: String,
    call: GlobalRef,
    result_type: String,
}

impl std::fmt::Debug for JavaTableFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JavaTableFunction")
            .field("name", &self.name)
            .field("class", &self.class)
            .field("result_type", &self.result_type)
            .finish()
    }
}

/// The rows a table function emitted for a batch of input rows.
#[derive(Debug)]
pub struct TableRows {
    /// Per emitted row, the index of the input row whose `eval` call emitted it (ascending).
    pub owners: Vec<u32>,
    /// The emitted rows' columns, one per output field.
    pub columns: Vec<ArrayRef>,
}

impl JavaTableFunction {
    /// Loads `class` from `jars` for SQL argument types `arg_types` (Flink type strings); `name`
    /// is the SQL name used in errors.
    pub fn resolve(name: &str, class: &str, jars: &[String], arg_types: &[String]) -> Result<Self> {
        let context = || format!("Java table function '{name}' ({class})");
        let (call, result_type) = resolve_call(
            &context,
            "table",
            "riffle/jvm/TableCall",
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

    /// The type of the emitted rows: `ROW<`name` TYPE, ...>` (an atomic output is one column
    /// `EXPR$0`, as Flink names it).
    pub fn result_type(&self) -> &str {
        &self.result_type
    }

    /// Calls `eval` on each of `rows` rows of the argument columns `args`; the emitted columns
    /// have the types `fields` (the Arrow forms of [`Self::result_type`]'s fields).
    pub fn eval(&self, args: &[ArrayRef], rows: usize, fields: &[DataType]) -> Result<TableRows> {
        for t in args.iter().map(|a| a.data_type()).chain(fields) {
            if !columns::supported(t) {
                return Err(JvmError::new(format!(
                    "Java table function '{}' ({}): {}",
                    self.name,
                    self.class,
                    columns::unsupported(t)
                )));
            }
        }
        let context = || {
            format!(
                "Java table function '{}' ({}) failed",
                self.name, self.class
            )
        };
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
            let out = JObjectArray::from(out);
            let owners = JIntArray::from(env.get_object_array_element(&out, 0)?);
            let emitted = env.get_array_length(&owners)? as usize;
            let owners = columns::read_ints(env, &owners, emitted)?
                .into_iter()
                .map(|o| o as u32)
                .collect();
            let mut columns = Vec::with_capacity(fields.len());
            for (i, t) in fields.iter().enumerate() {
                let column = env.get_object_array_element(&out, (i + 1) as i32)?;
                columns.push(columns::from_java(env, &column, t, emitted)?);
            }
            Ok(TableRows { owners, columns })
        })
    }
}

impl Drop for JavaTableFunction {
    fn drop(&mut self) {
        if jvm().is_ok() {
            let context = || {
                format!(
                    "Java table function '{}' ({}) close()",
                    self.name, self.class
                )
            };
            if let Err(e) = with_env(&context, |env| {
                env.call_method(self.call.as_obj(), "close", "()V", &[])?;
                Ok(())
            }) {
                eprintln!("riffle: {e}");
            }
        }
    }
}
