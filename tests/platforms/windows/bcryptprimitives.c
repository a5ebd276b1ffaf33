/*
 * A stand-in for Windows' bcryptprimitives.dll, for running mcp-chain's
 * Windows build under Wine 8 (Debian 12's), which lacks it. Rust's standard
 * library asks it for randomness (ProcessPrng) since Rust 1.78; every
 * Windows 10 and later has it. This shim answers from RtlGenRandom, which
 * Wine has. It is built and installed into the test's Wine prefix by
 * tests/platforms/windows/smoke.sh only: never shipped, never needed on Windows.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
