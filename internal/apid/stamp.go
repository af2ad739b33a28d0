package apid

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/talosbox/talosbox/internal/api/common"
)

var metadataName = (&common.Metadata{}).ProtoReflect().Descriptor().FullName()

// stampHostname writes the serving node's name into common.Metadata field
// 1 of a message, or of each message in its repeated field 1 (the Talos
// response convention: `repeated X messages = 1`, each X with `Metadata
// metadata = 1`), so a client talking to many nodes knows who answered.
func stampHostname(m proto.Message, hostname string) {
	msg := m.ProtoReflect()

	fd := msg.Descriptor().Fields().ByNumber(1)
	if fd == nil || fd.Kind() != protoreflect.MessageKind {
		return
	}

	switch {
	case fd.IsList():
		list := msg.Get(fd).List()
		for i := range list.Len() {
			stampMetadata(list.Get(i).Message(), hostname)
		}
	case fd.Message().FullName() == metadataName:
		stampMetadata(msg, hostname)
	}
}

// stampMetadata sets field 1 of msg, a common.Metadata, to carry hostname.
func stampMetadata(msg protoreflect.Message, hostname string) {
	fd := msg.Descriptor().Fields().ByNumber(1)
	if fd == nil || fd.IsList() || fd.Kind() != protoreflect.MessageKind || fd.Message().FullName() != metadataName {
		return
	}

	md := msg.Mutable(fd).Message()
	md.Set(md.Descriptor().Fields().ByNumber(1), protoreflect.ValueOfString(hostname))
}
