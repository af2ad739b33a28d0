package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The link types of the files Capture writes (LINKTYPE_* in libpcap's
// list).
const (
	LinkTypeEthernet uint32 = 1
	LinkTypeRaw      uint32 = 101
)

// magic is the classic pcap magic for microsecond timestamps.
const magic = 0xa1b2c3d4

// FileHeader is a pcap file's 24-byte header, little-endian, version 2.4:
// the format tcpdump -w writes and every reader takes. It is written here
// rather than with a packet library because the binary is every applet:
// gopacket's layers package alone costs every talosctl start 4 ms of init.
func FileHeader(snapLen, linkType uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint16(b[4:], 2)
	binary.LittleEndian.PutUint16(b[6:], 4)
	binary.LittleEndian.PutUint32(b[16:], snapLen)
	binary.LittleEndian.PutUint32(b[20:], linkType)

	return b
}

// RecordHeader is the 16-byte header before each packet's captured bytes.
func RecordHeader(ts time.Time, captured, length int) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(b[4:], uint32(ts.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(b[8:], uint32(captured))
	binary.LittleEndian.PutUint32(b[12:], uint32(length))

	return b
}

// Reader reads the files Capture writes (either byte order, microsecond
// or nanosecond timestamps), for talosctl's packet printer.
type Reader struct {
	r        io.Reader
	order    binary.ByteOrder
	nano     bool
	LinkType uint32
}

// Packet is one record.
type Packet struct {
	Time   time.Time
	Length int // on the wire
	Data   []byte
}

// NewReader reads the file header. An empty stream is io.EOF.
func NewReader(r io.Reader) (*Reader, error) {
	h := make([]byte, 24)
	if _, err := io.ReadFull(r, h); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("pcap: truncated file header")
		}

		return nil, err
	}

	pr := &Reader{r: r}

	switch m := binary.LittleEndian.Uint32(h); m {
	case magic:
		pr.order = binary.LittleEndian
	case 0xa1b23c4d:
		pr.order, pr.nano = binary.LittleEndian, true
	case 0xd4c3b2a1:
		pr.order = binary.BigEndian
	case 0x4d3cb2a1:
		pr.order, pr.nano = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("pcap: not a pcap file (magic %#08x)", m)
	}

	pr.LinkType = pr.order.Uint32(h[20:])

	return pr, nil
}

// Next reads the next packet; io.EOF at the end.
func (pr *Reader) Next() (Packet, error) {
	h := make([]byte, 16)
	if _, err := io.ReadFull(pr.r, h); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Packet{}, fmt.Errorf("pcap: truncated record header")
		}

		return Packet{}, err
	}

	n := pr.order.Uint32(h[8:])
	if n > 1<<20 {
		return Packet{}, fmt.Errorf("pcap: record of %d bytes", n)
	}

	data := make([]byte, n)
	if _, err := io.ReadFull(pr.r, data); err != nil {
		return Packet{}, fmt.Errorf("pcap: truncated record: %w", err)
	}

	frac := time.Duration(pr.order.Uint32(h[4:]))
	if !pr.nano {
		frac *= time.Microsecond
	}

	return Packet{Time: time.Unix(int64(pr.order.Uint32(h[0:])), int64(frac)), Length: int(pr.order.Uint32(h[12:])), Data: data}, nil
}
