//! A private file on Windows: created with a security descriptor whose
//! DACL is protected (nothing inherited from the directory) and holds one
//! entry, full control for the user mcp-chain runs as. Administrators and
//! SYSTEM keep what Windows always gives them (taking ownership), and no
//! one else is named. The descriptor goes to `CreateFileW` itself, so the
//! file never exists with its directory's permissions, not even for an
//! instant; std's `OpenOptions` has no way to pass one, hence the direct
//! calls and this crate's only `unsafe` (the eleven blocks below: the
//! process token's user, the descriptor and its one-entry ACL, the
//! `CreateFileW` call, the handle it returns), which touches file creation
//! alone, never a message.

#![allow(unsafe_code)]

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{FromRawHandle, OwnedHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Security::{
    AddAccessAllowedAce, GetLengthSid, GetTokenInformation, InitializeAcl,
    InitializeSecurityDescriptor, SetSecurityDescriptorControl, SetSecurityDescriptorDacl,
    TokenUser, ACL, ACL_REVISION, SECURITY_ATTRIBUTES, SECURITY_DESCRIPTOR, SE_DACL_PROTECTED,
    TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, CREATE_NEW, FILE_ALL_ACCESS, FILE_APPEND_DATA, FILE_ATTRIBUTE_NORMAL,
    FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, OPEN_ALWAYS,
    READ_CONTROL, SYNCHRONIZE,
};
use windows_sys::Win32::System::SystemServices::SECURITY_DESCRIPTOR_REVISION;
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// How a private file is opened.
pub(super) enum Open {
    /// Appended to; created private when missing (an existing file keeps
    /// its ACL, as an existing file keeps its mode on Unix).
    Append,
    /// Created, never opened when it exists.
    CreateNew,
}

/// Opens `path` as `how` says, creating it private to the current user.
pub(super) fn open(path: &Path, how: Open) -> io::Result<File> {
    let private = UserOnly::new()?;
    let attributes = SECURITY_ATTRIBUTES {
        nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: private.descriptor(),
        bInheritHandle: 0,
    };
    let (access, disposition) = match how {
        // Append-only rights (no FILE_WRITE_DATA): every write lands at
        // the end, as std's `append(true)` does.
        Open::Append => (
            FILE_APPEND_DATA | FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE,
            OPEN_ALWAYS,
        ),
        Open::CreateNew => (GENERIC_WRITE | READ_CONTROL, CREATE_NEW),
    };
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
    // SAFETY: `wide` is NUL-terminated; `attributes`, the descriptor and
    // the ACL it points at are alive for the call.
    let handle = unsafe {
        CreateFileW(
            wide.as_ptr(),
            access,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            &attributes,
            disposition,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle CreateFileW just returned, owned by nobody else.
    Ok(File::from(unsafe { OwnedHandle::from_raw_handle(handle) }))
}

/// A security descriptor granting the current user alone: a protected
/// DACL with one entry, the user's full control.
struct UserOnly {
    // The descriptor points at `acl`, which points at nothing else (the
    // SID is copied into it); both heap buffers stay put while `self`
    // lives, wherever `self` moves.
    descriptor: Box<SECURITY_DESCRIPTOR>,
    _acl: UserOnlyAcl,
}

impl UserOnly {
    fn new() -> io::Result<Self> {
        let acl = UserOnlyAcl::new(&UserSid::current()?)?;
        // SAFETY: SECURITY_DESCRIPTOR is plain data; all zeroes is what
        // InitializeSecurityDescriptor starts from.
        let mut descriptor = Box::new(unsafe { std::mem::zeroed::<SECURITY_DESCRIPTOR>() });
        let sd = (&raw mut *descriptor).cast::<c_void>();
        // SAFETY: `sd` points at a live SECURITY_DESCRIPTOR; the ACL it is
        // given lives as long as it does (both are in `Self`).
        let ready = unsafe {
            InitializeSecurityDescriptor(sd, SECURITY_DESCRIPTOR_REVISION) != 0
                && SetSecurityDescriptorDacl(sd, 1, acl.as_ptr(), 0) != 0
                && SetSecurityDescriptorControl(sd, SE_DACL_PROTECTED, SE_DACL_PROTECTED) != 0
        };
        if !ready {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            descriptor,
            _acl: acl,
        })
    }

    fn descriptor(&self) -> *mut c_void {
        (&raw const *self.descriptor).cast_mut().cast()
    }
}

/// The SID of the user this process runs as (a copy of the token's
/// TOKEN_USER, which the SID points into).
struct UserSid {
    buffer: Vec<u64>,
}

impl UserSid {
    fn current() -> io::Result<Self> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: the pseudo-handle of our own process; `token` is written.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: OpenProcessToken succeeded, so `token` is ours to close.
        let token = unsafe { OwnedHandle::from_raw_handle(token) };
        let raw = std::os::windows::io::AsRawHandle::as_raw_handle(&token);
        let mut needed = 0u32;
        // SAFETY: asking the size only (null buffer, length 0).
        unsafe { GetTokenInformation(raw, TokenUser, std::ptr::null_mut(), 0, &mut needed) };
        if needed == 0 {
            return Err(io::Error::last_os_error());
        }
        // u64 words: the buffer is aligned for TOKEN_USER and the SID.
        let mut buffer = vec![0u64; (needed as usize).div_ceil(8)];
        // SAFETY: `buffer` holds `needed` bytes.
        let ok = unsafe {
            GetTokenInformation(
                raw,
                TokenUser,
                buffer.as_mut_ptr().cast(),
                needed,
                &mut needed,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { buffer })
    }

    fn as_ptr(&self) -> *mut c_void {
        // SAFETY: `buffer` holds a TOKEN_USER written by the system.
        unsafe { (*self.buffer.as_ptr().cast::<TOKEN_USER>()).User.Sid }
    }
}

/// A DACL with one entry: full control for one user.
struct UserOnlyAcl {
    buffer: Vec<u64>,
}

impl UserOnlyAcl {
    fn new(user: &UserSid) -> io::Result<Self> {
        let sid = user.as_ptr();
        // SAFETY: `sid` points into `user`, a valid SID.
        let sid_len = unsafe { GetLengthSid(sid) } as usize;
        // The ACL header, one ACCESS_ALLOWED_ACE (whose last field is the
        // SID's first word), and the SID.
        let len = size_of::<ACL>() + 8 + sid_len + 8;
        let mut buffer = vec![0u64; len.div_ceil(8)];
        let acl = buffer.as_mut_ptr().cast::<ACL>();
        // SAFETY: `acl` points at `len` zeroed, aligned bytes.
        let ok = unsafe {
            InitializeAcl(acl, len as u32, ACL_REVISION) != 0
                && AddAccessAllowedAce(acl, ACL_REVISION, FILE_ALL_ACCESS, sid) != 0
        };
        if !ok {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { buffer })
    }

    fn as_ptr(&self) -> *const ACL {
        self.buffer.as_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use windows_sys::Win32::Security::{
        EqualSid, GetAce, GetSecurityDescriptorControl, GetSecurityDescriptorDacl,
        ACCESS_ALLOWED_ACE,
    };

    /// What a descriptor grants: (protected, [(access mask, is our user)]).
    fn grants(private: &UserOnly) -> (bool, Vec<(u32, bool)>) {
        let user = UserSid::current().expect("our SID");
        let sd = private.descriptor();
        let (mut present, mut defaulted) = (0, 0);
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let (mut control, mut revision) = (0u16, 0u32);
        let mut entries = Vec::new();
        // SAFETY: `sd` is alive in `private`; the DACL points into it and
        // AceCount bounds the indices.
        unsafe {
            assert_ne!(
                GetSecurityDescriptorDacl(sd, &mut present, &mut dacl, &mut defaulted),
                0
            );
            assert_ne!(
                GetSecurityDescriptorControl(sd, &mut control, &mut revision),
                0
            );
            assert!(present != 0 && !dacl.is_null(), "a DACL is present");
            for i in 0..u32::from((*dacl).AceCount) {
                let mut ace: *mut c_void = std::ptr::null_mut();
                assert_ne!(GetAce(dacl, i, &mut ace), 0);
                let ace = ace.cast::<ACCESS_ALLOWED_ACE>();
                let sid = (&raw mut (*ace).SidStart).cast::<c_void>();
                entries.push(((*ace).Mask, EqualSid(sid, user.as_ptr()) != 0));
            }
        }
        (control & SE_DACL_PROTECTED != 0, entries)
    }

    #[test]
    fn the_descriptor_grants_its_user_alone_and_inherits_nothing() {
        let private = UserOnly::new().expect("a descriptor");
        let moved = private;
        assert_eq!(grants(&moved), (true, vec![(FILE_ALL_ACCESS, true)]));
    }

    #[test]
    fn files_are_created_new_or_appended_to() {
        let dir = std::env::temp_dir().join(format!("mcp-chain-acl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        let new = dir.join("new");
        open(&new, Open::CreateNew)
            .expect("created")
            .write_all(b"one")
            .expect("written");
        assert!(
            open(&new, Open::CreateNew).is_err(),
            "an existing name is not reused"
        );
        let log = dir.join("log");
        for line in ["a\n", "b\n"] {
            open(&log, Open::Append)
                .expect("opened")
                .write_all(line.as_bytes())
                .expect("appended");
        }
        assert_eq!(std::fs::read(&log).expect("read"), b"a\nb\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
