//! The process's one JVM: loaded from `libjvm` and started on first use.

use std::ffi::{c_void, CString};
use std::sync::OnceLock;

use jni::objects::{GlobalRef, JObject, JValue};
use jni::sys;
use jni::{JNIEnv, JavaVM};

use crate::{classes, locate, JvmError, Result};

static JVM: OnceLock<std::result::Result<JavaVM, JvmError>> = OnceLock::new();

/// The running JVM, started with the bridge on its class path the first time it is needed.
pub(crate) fn jvm() -> Result<&'static JavaVM> {
    JVM.get_or_init(start).as_ref().map_err(Clone::clone)
}

type CreateJavaVm =
    unsafe extern "system" fn(*mut *mut sys::JavaVM, *mut *mut c_void, *mut c_void) -> sys::jint;

fn start() -> Result<JavaVM> {
    let classes = classes::compiled()?;
    let lib_path = locate::libjvm()?;
    // SAFETY: loading libjvm runs its initialisers, which have no preconditions.
    let lib = unsafe { libloading::Library::new(&lib_path) }
        .map_err(|e| JvmError::new(format!("cannot load {}: {e}", lib_path.display())))?;
    // The JVM lives as long as the process; its library must never be unloaded.
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: JNI_CreateJavaVM has this signature in every JVM.
    let create: libloading::Symbol<CreateJavaVm> = unsafe { lib.get(b"JNI_CreateJavaVM\0") }
        .map_err(|e| JvmError::new(format!("{} is not a JVM: {e}", lib_path.display())))?;

    let mut options = vec![
        format!("-Djava.class.path={}", classes.display()),
        // Leave SIGINT/SIGTERM to Riffle (Ctrl-C stops the job cleanly).
        "-Xrs".to_string(),
    ];
    if let Ok(extra) = std::env::var("RIFFLE_JVM_OPTS") {
        options.extend(extra.split_whitespace().map(str::to_string));
    }
    let options: Vec<CString> = options
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| JvmError::new("JVM option contains a NUL byte")))
        .collect::<Result<_>>()?;
    let mut raw_options: Vec<sys::JavaVMOption> = options
        .iter()
        .map(|o| sys::JavaVMOption {
            optionString: o.as_ptr() as *mut _,
            extraInfo: std::ptr::null_mut(),
        })
        .collect();
    let mut args = sys::JavaVMInitArgs {
        version: sys::JNI_VERSION_1_8,
        nOptions: raw_options.len() as sys::jint,
        options: raw_options.as_mut_ptr(),
        ignoreUnrecognized: sys::JNI_FALSE,
    };
    let mut vm: *mut sys::JavaVM = std::ptr::null_mut();
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: the arguments point to live, well-formed structures for the duration of the call.
    let rc = unsafe { create(&mut vm, &mut env, &mut args as *mut _ as *mut c_void) };
    if rc != sys::JNI_OK || vm.is_null() {
        return Err(JvmError::new(format!(
            "the JVM from {} did not start (JNI error {rc}); a process can start only one JVM",
            lib_path.display()
        )));
    }
    // SAFETY: `vm` was just created by JNI_CreateJavaVM.
    let vm = unsafe { JavaVM::from_raw(vm) }.map_err(|e| JvmError::new(e.to_string()))?;
    Ok(vm)
}

/// Runs `f` on this thread's JNI environment inside a local frame (so local references of a
/// long-lived attached thread are freed), turning a pending Java exception into an error whose
/// message starts with `context`.
pub(crate) fn with_env<T>(
    context: &dyn Fn() -> String,
    f: impl FnOnce(&mut JNIEnv<'_>) -> jni::errors::Result<T>,
) -> Result<T> {
    let vm = jvm()?;
    let mut env = vm
        .attach_current_thread_permanently()
        .map_err(|e| JvmError::new(format!("cannot attach to the JVM: {e}")))?;
    env.push_local_frame(64)
        .map_err(|e| JvmError::new(format!("JVM out of memory: {e}")))?;
    let result = f(&mut env);
    let result = match result {
        Ok(v) => Ok(v),
        Err(jni::errors::Error::JavaException) => Err(JvmError::new(format!(
            "{}: {}",
            context(),
            describe_exception(&mut env)
        ))),
        Err(e) => Err(JvmError::new(format!("{}: {e}", context()))),
    };
    // SAFETY: the frame pushed above; no local reference escapes `f` (results are Rust data or
    // global references).
    let _ = unsafe { env.pop_local_frame(&JObject::null()) };
    result
}

/// Clears the pending exception and describes it (class, message, causes, user frames).
fn describe_exception(env: &mut JNIEnv<'_>) -> String {
    let Ok(throwable) = env.exception_occurred() else {
        return "unknown Java error".into();
    };
    let _ = env.exception_clear();
    let described = env
        .call_static_method(
            "riffle/jvm/Bridge",
            "describe",
            "(Ljava/lang/Throwable;)Ljava/lang/String;",
            &[JValue::Object(&throwable)],
        )
        .and_then(|v| v.l())
        .and_then(|s| env.get_string(&s.into()).map(String::from));
    match described {
        Ok(text) => text,
        Err(_) => {
            let _ = env.exception_clear();
            "Java exception (its description failed)".into()
        }
    }
}

/// A Java `String[]` of `items`.
pub(crate) fn string_array<'l>(
    env: &mut JNIEnv<'l>,
    items: &[String],
) -> jni::errors::Result<JObject<'l>> {
    let arr = env.new_object_array(items.len() as i32, "java/lang/String", JObject::null())?;
    for (i, s) in items.iter().enumerate() {
        let js = env.new_string(s)?;
        env.set_object_array_element(&arr, i as i32, js)?;
    }
    Ok(arr.into())
}

/// The bridge's class loader over `jars` (one per distinct list).
pub(crate) fn class_loader<'l>(
    env: &mut JNIEnv<'l>,
    jars: &[String],
) -> jni::errors::Result<JObject<'l>> {
    let jar_array = string_array(env, jars)?;
    env.call_static_method(
        "riffle/jvm/Bridge",
        "loader",
        "([Ljava/lang/String;)Ljava/lang/ClassLoader;",
        &[JValue::Object(&jar_array)],
    )?
    .l()
}

/// What kind of Flink function `class` (from `jars`) is: `scalar`, `table`, `aggregate` or
/// `other`. Starts the JVM.
pub fn function_kind(class: &str, jars: &[String]) -> Result<String> {
    let context = || format!("Java function class {class}");
    with_env(&context, |env| {
        let loader = class_loader(env, jars)?;
        let name = env.new_string(class)?;
        let kind = env
            .call_static_method(
                "riffle/jvm/Bridge",
                "kind",
                "(Ljava/lang/ClassLoader;Ljava/lang/String;)Ljava/lang/String;",
                &[JValue::Object(&loader), JValue::Object(&name)],
            )?
            .l()?;
        Ok(String::from(env.get_string(&kind.into())?))
    })
}

/// Asks the bridge (`Bridge.<bridge_method>`) to load `class` from `jars` and pick its methods
/// for the SQL argument types; returns the bridge's call object (a `call_class`) and the
/// function's SQL result type. Shared by every kind of Java function.
pub(crate) fn resolve_call(
    context: &dyn Fn() -> String,
    bridge_method: &str,
    call_class: &str,
    class: &str,
    jars: &[String],
    arg_types: &[String],
) -> Result<(GlobalRef, String)> {
    let signature =
        format!("(Ljava/lang/ClassLoader;Ljava/lang/String;[Ljava/lang/String;)L{call_class};");
    let call = with_env(context, |env| {
        let loader = class_loader(env, jars)?;
        let class_name = env.new_string(class)?;
        let types = string_array(env, arg_types)?;
        let call = env
            .call_static_method(
                "riffle/jvm/Bridge",
                bridge_method,
                &signature,
                &[
                    JValue::Object(&loader),
                    JValue::Object(&class_name),
                    JValue::Object(&types),
                ],
            )?
            .l()?;
        env.new_global_ref(call)
    })?;
    let result_type = with_env(context, |env| {
        let s = env
            .call_method(call.as_obj(), "resultType", "()Ljava/lang/String;", &[])?
            .l()?;
        Ok(String::from(env.get_string(&s.into())?))
    })?;
    Ok((call, result_type))
}
