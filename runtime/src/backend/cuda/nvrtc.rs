//! NVRTC, the run-time CUDA compiler, opened from a file of either major (`libnvrtc.so.12` or
//! `.13`). Bound here rather than through cudarc, whose loader is fixed to one major's names;
//! the ten calls used have had the same signatures since CUDA 11.
//!
//! Kernels are compiled to CUBIN for the device's own architecture whenever NVRTC knows it:
//! a CUBIN loads on any driver of its major, while PTX from an NVRTC newer than the driver
//! does not load at all (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`).

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::PathBuf;

use libloading::Library;

use super::libraries::{static_text, Loaded};

type Program = *mut c_void;
type Status = c_int;

type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status;
type Create = unsafe extern "C" fn(
    *mut Program,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> Status;
type Compile = unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status;
type Size = unsafe extern "C" fn(Program, *mut usize) -> Status;
type Copy = unsafe extern "C" fn(Program, *mut c_char) -> Status;
type Destroy = unsafe extern "C" fn(*mut Program) -> Status;
type ErrorString = unsafe extern "C" fn(Status) -> *const c_char;

/// What NVRTC is asked to produce.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Machine code for one architecture, e.g. `sm_90`.
    Cubin(String),
    /// PTX for a virtual architecture, e.g. `compute_90` (`None`: NVRTC's default).
    Ptx(Option<String>),
}

impl Target {
    /// The file extension of its output.
    pub(crate) fn extension(&self) -> &'static str {
        match self {
            Target::Cubin(_) => "cubin",
            Target::Ptx(_) => "ptx",
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Cubin(arch) => write!(f, "CUBIN for {arch}"),
            Target::Ptx(Some(arch)) => write!(f, "PTX for {arch}"),
            Target::Ptx(None) => write!(f, "PTX"),
        }
    }
}

/// One NVRTC library, opened.
pub struct Nvrtc {
    /// Its version, `(major, minor)`.
    pub version: (i32, i32),
    /// The file it was loaded from.
    pub path: PathBuf,
    create: Create,
    compile: Compile,
    log_size: Size,
    log: Copy,
    ptx_size: Size,
    ptx: Copy,
    cubin_size: Size,
    cubin: Copy,
    destroy: Destroy,
    error_string: ErrorString,
    // Kept last: the function pointers above point into it.
    _library: Library,
}

impl Nvrtc {
    /// Binds the calls of a loaded NVRTC; an error names the missing call.
    pub(crate) fn bind(loaded: Loaded) -> std::result::Result<Nvrtc, String> {
        // SAFETY: each type above is the call's C signature; the library outlives the
        // pointers (kept in the same struct).
        unsafe {
            let version_fn: Version = loaded.symbol("nvrtcVersion")?;
            let (mut major, mut minor) = (0, 0);
            version_fn(&mut major, &mut minor);
            Ok(Nvrtc {
                version: (major, minor),
                path: loaded.path.clone(),
                create: loaded.symbol("nvrtcCreateProgram")?,
                compile: loaded.symbol("nvrtcCompileProgram")?,
                log_size: loaded.symbol("nvrtcGetProgramLogSize")?,
                log: loaded.symbol("nvrtcGetProgramLog")?,
                ptx_size: loaded.symbol("nvrtcGetPTXSize")?,
                ptx: loaded.symbol("nvrtcGetPTX")?,
                cubin_size: loaded.symbol("nvrtcGetCUBINSize")?,
                cubin: loaded.symbol("nvrtcGetCUBIN")?,
                destroy: loaded.symbol("nvrtcDestroyProgram")?,
                error_string: loaded.symbol("nvrtcGetErrorString")?,
                _library: loaded.library,
            })
        }
    }

    /// `"NVRTC 13.0"`.
    pub fn describe(&self) -> String {
        format!("NVRTC {}.{}", self.version.0, self.version.1)
    }

    fn status(&self, what: &str, status: Status) -> std::result::Result<(), String> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: NVRTC returns a static string for every status.
        let text = unsafe { static_text((self.error_string)(status)) }
            .unwrap_or_else(|| format!("status {status}"));
        Err(format!("{} {what}: {text}", self.describe()))
    }

    /// Compiles `source` (its file name for messages: `name`) for `target`: the CUBIN's bytes,
    /// or the PTX's text with its closing NUL. A rejected source is an error holding NVRTC's
    /// log.
    pub fn compile(
        &self,
        source: &str,
        name: &str,
        target: &Target,
    ) -> std::result::Result<Vec<u8>, String> {
        let c_source = CString::new(source).map_err(|_| "the source holds a NUL byte")?;
        let c_name = CString::new(name).map_err(|_| "the name holds a NUL byte")?;
        let mut options = Vec::new();
        match target {
            Target::Cubin(arch) | Target::Ptx(Some(arch)) => options
                .push(CString::new(format!("--gpu-architecture={arch}")).map_err(|_| "bad arch")?),
            Target::Ptx(None) => {}
        }
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut program: Program = std::ptr::null_mut();
        // SAFETY: valid C strings, no headers; `program` receives a new program.
        let created = unsafe {
            (self.create)(
                &mut program,
                c_source.as_ptr(),
                c_name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        self.status("could not create a program", created)?;
        let result = self.compile_program(program, &option_ptrs, target);
        // SAFETY: made above, destroyed once.
        unsafe { (self.destroy)(&mut program) };
        result
    }

    fn compile_program(
        &self,
        program: Program,
        options: &[*const c_char],
        target: &Target,
    ) -> std::result::Result<Vec<u8>, String> {
        let count = c_int::try_from(options.len()).unwrap_or(c_int::MAX);
        // SAFETY: `options` holds `count` valid C strings that outlive the call.
        let compiled = unsafe { (self.compile)(program, count, options.as_ptr()) };
        if compiled != 0 {
            let log = self
                .read(program, self.log_size, self.log)
                .unwrap_or_default();
            let log = String::from_utf8_lossy(&log);
            return Err(format!(
                "{} rejected the kernels ({target}):\n{}",
                self.describe(),
                log.trim_end_matches('\0').trim_end()
            ));
        }
        match target {
            Target::Cubin(_) => self.read(program, self.cubin_size, self.cubin),
            Target::Ptx(_) => self.read(program, self.ptx_size, self.ptx),
        }
    }

    fn read(
        &self,
        program: Program,
        size: Size,
        copy: Copy,
    ) -> std::result::Result<Vec<u8>, String> {
        let mut len = 0usize;
        // SAFETY: a compiled program; `len` is a valid out-pointer.
        self.status("size", unsafe { size(program, &mut len) })?;
        let mut bytes = vec![0u8; len];
        // SAFETY: `bytes` has the room NVRTC asked for.
        self.status("copy", unsafe {
            copy(program, bytes.as_mut_ptr() as *mut c_char)
        })?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_name_their_output() {
        assert_eq!(Target::Cubin("sm_90".into()).to_string(), "CUBIN for sm_90");
        assert_eq!(Target::Ptx(Some("compute_90".into())).extension(), "ptx");
        assert_eq!(Target::Cubin("sm_90".into()).extension(), "cubin");
    }
}
