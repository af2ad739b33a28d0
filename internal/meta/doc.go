// Package meta reads and writes the META partition: Talos's small
// key-value store that survives reinstalls and upgrades (the upgrade
// fallback, the STATE encryption config, the machine UUID override, ...).
//
// The partition (1 MiB in the system layout) holds two formats, both kept
// byte for byte as Talos writes them:
//
//   - The Talos ADV at offset 0: two identical 256 KiB copies. Each is,
//     big-endian, magic 0x5a4b3c2d, records of (uint32 tag, uint32 size,
//     value) ended by tag 0 or by the end of the data area, then the
//     SHA-256 of the whole copy computed with the checksum field zeroed,
//     then magic 0xa5b4c3d2.
//   - The syslinux ADV in the last KiB: two identical 512-byte copies,
//     little-endian, head magic 0x5a2d2fa5, a checksum word that makes the
//     words from offset 4 to 508 sum to 0xa3041767, records of (byte tag,
//     byte size, value), tail magic 0xdd28bf64. Talos before 1.4 kept its
//     tags there; they are still read as a fallback, and the area is
//     written back on every flush, as Talos does.
//
// Two copies exist so that a torn or rotten write loses nothing: a copy
// that fails its checks is rewritten from the good one on the next flush,
// and Damaged says which. A partition of zeros (as an install leaves it
// before the first write) is an empty META. Anything else with no good
// copy is ErrCorrupt: Talos would read it as empty and overwrite it on
// the next write; this package refuses, so that nothing is lost silently.
//
// Where this package deliberately differs from Talos's code:
//   - Records are written in tag order; Talos writes them in Go map order,
//     so its bytes for more than one tag vary from write to write (both
//     read the same).
//   - The capacity check counts the header of a new record (Talos's
//     omits it, which its own 20 spare bytes cover); values that do not
//     grow the store are always accepted.
//   - Tag 0 (the end marker) is refused as a key; a record whose tag does
//     not fit in a byte makes its copy invalid (Talos truncates it).
//   - Syslinux records are trusted only from a copy whose magics and
//     checksum hold, as syslinux itself reads them.
package meta
