// Package iscsi is a user-space iSCSI initiator (RFC 7143) in pure Go, used by the
// conductor to write images to a node's disk exported by the deploy ramdisk's target,
// since no kernel initiator is available where the conductor runs.
//
// A Session is one login over one TCP connection at error recovery level 0: header and
// data digests off, no connection or task recovery. Any transport failure, protocol
// violation, command timeout or cancellation of an in-flight command ends the session;
// the caller reconnects with Dial. Several commands are kept in flight (Options.QueueDepth,
// bounded by the target's MaxCmdSN window); a single reader goroutine demultiplexes the
// target's PDUs by task tag, placing Data-In straight into the caller's buffer, and write
// data leaves the caller's buffer through vectored writes without copies.
//
// A LUN is a block device (READ/WRITE(16), READ CAPACITY(16) with a (10) fallback,
// SYNCHRONIZE CACHE); Device adapts it to io.ReaderAt and io.WriterAt, and
// (*LUN).CopyFrom streams a reader onto it with read-ahead.
package iscsi
