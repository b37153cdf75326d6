"""MUNGE credentials: who a user is, proven across the hosts of a cluster (as Slurm and Flux
prove it). The user's own process asks the host's munged for a credential; munged puts in the
uid and gid the kernel gives it for that process (SO_PEERCRED), a time to live, and a payload,
and seals it with the key every host of the cluster shares. The controller's munged opens it,
refuses one that is forged, expired or already used once (a replay), and says whose it is.

The binding is libmunge through ctypes: five functions, no compiler, nothing imported until a
credential is made or opened. (pymunge, the Python binding on PyPI, has not changed since 2017.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
from dataclasses import dataclass

from drover.config import MUNGE_SOCKET

DEFAULT_SOCKET = MUNGE_SOCKET
HEADER = "X-Drover-Credential"

# munge.h
_OPT_TTL = 4
_OPT_ENCODE_TIME = 6
_OPT_SOCKET = 8
EMUNGE_SOCKET = 6
EMUNGE_CRED_INVALID = 14
EMUNGE_CRED_EXPIRED = 15
EMUNGE_CRED_REWOUND = 16
EMUNGE_CRED_REPLAYED = 17

_WHY = {
    EMUNGE_CRED_EXPIRED: "it has expired",
    EMUNGE_CRED_REWOUND: "it was made in the future (are the hosts' clocks in step?)",
    EMUNGE_CRED_REPLAYED: "it was used before (a replay)",
}


class CredentialError(Exception):
    """A credential that could not be made or does not prove anything; the message says why."""


@dataclass(frozen=True, slots=True)
class Opened:
    uid: int
    gid: int
    payload: bytes
    encoded_at: int  # Unix time


def request_digest(method: str, target: str, body: bytes) -> bytes:
    """What a request's credential carries: the request it was made for (method, path with its
    query, body), so that it proves nothing about any other request."""
    return hashlib.sha256(method.encode() + b" " + target.encode() + b"\n" + body).digest()


def encode(payload: bytes, socket: str = DEFAULT_SOCKET, ttl_s: int = 0) -> str:
    """A credential for the calling process's user, carrying `payload`. `ttl_s` 0: munged's default."""
    lib = _library()
    context = _context(lib, socket)
    try:
        if ttl_s:
            lib.munge_ctx_set(context, _OPT_TTL, ctypes.c_int(ttl_s))
        credential = ctypes.c_char_p()
        error = lib.munge_encode(ctypes.byref(credential), context, payload, len(payload))
        if error:
            raise CredentialError(f"cannot make a MUNGE credential: {_message(lib, context, error)}")
        try:
            return (credential.value or b"").decode()
        finally:
            _free(credential)
    finally:
        lib.munge_ctx_destroy(context)


def decode(credential: str, socket: str = DEFAULT_SOCKET, accept_stale: bool = False) -> Opened:
    """Whose `credential` is; CredentialError if it is forged, expired or a replay. `accept_stale`:
    one that munged finds expired or used before is returned all the same (its encode time
    says how old it is), for a signature over something fixed (cluster/signing.py)."""
    lib = _library()
    context = _context(lib, socket)
    try:
        payload, length = ctypes.c_void_p(), ctypes.c_int()
        uid, gid = ctypes.c_uint(), ctypes.c_uint()
        error = lib.munge_decode(credential.encode(), context, ctypes.byref(payload), ctypes.byref(length),
                                 ctypes.byref(uid), ctypes.byref(gid))
        try:
            data = ctypes.string_at(payload, length.value) if payload.value else b""
        finally:
            _free(payload)
        if error and not (accept_stale and error in (EMUNGE_CRED_EXPIRED, EMUNGE_CRED_REPLAYED)):
            why = _WHY.get(error) or _message(lib, context, error)
            raise CredentialError(f"the MUNGE credential is refused: {why}")
        encoded_at = ctypes.c_long()
        lib.munge_ctx_get(context, _OPT_ENCODE_TIME, ctypes.byref(encoded_at))
        return Opened(uid.value, gid.value, data, encoded_at.value)
    finally:
        lib.munge_ctx_destroy(context)


_lib: ctypes.CDLL | None = None
_libc: ctypes.CDLL | None = None


def _library() -> ctypes.CDLL:
    global _lib, _libc
    if _lib is None:
        name = ctypes.util.find_library("munge") or "libmunge.so.2"
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            raise CredentialError("MUNGE is not installed on this host (libmunge.so.2; on Debian: "
                                  "apt-get install munge)") from None
        lib.munge_ctx_create.restype = ctypes.c_void_p
        lib.munge_ctx_destroy.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_strerror.restype = ctypes.c_char_p
        lib.munge_ctx_strerror.argtypes = [ctypes.c_void_p]
        lib.munge_strerror.restype = ctypes.c_char_p
        lib.munge_strerror.argtypes = [ctypes.c_int]
        lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.munge_decode.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_uint),
                                     ctypes.POINTER(ctypes.c_uint)]
        _libc = ctypes.CDLL(None)
        _lib = lib
    return _lib


def _context(lib: ctypes.CDLL, socket: str) -> ctypes.c_void_p:
    context = ctypes.c_void_p(lib.munge_ctx_create())
    if not context.value:
        raise CredentialError("cannot make a MUNGE context (out of memory)")
    lib.munge_ctx_set(context, _OPT_SOCKET, socket.encode())
    return context


def _message(lib: ctypes.CDLL, context: ctypes.c_void_p, error: int) -> str:
    text = lib.munge_ctx_strerror(context) or lib.munge_strerror(error) or b"unknown error"
    message = text.decode(errors="replace")
    if error == EMUNGE_SOCKET:
        message += "" if "munged" in message else " (is munged running?)"
    return message


def _free(pointer: ctypes.c_char_p | ctypes.c_void_p) -> None:
    """libmunge's buffers are malloc'd: free(3) them."""
    if pointer.value and _libc is not None:
        _libc.free(ctypes.cast(pointer, ctypes.c_void_p))
