// Package api holds the talosbox node API definitions: common, machine
// (MachineService), resource (ResourceService), security, time (TimeService),
// inspect (InspectService) and storage (StorageService), each a protobuf package
// with its generated Go package beside it; events is Talos's EventSinkService,
// which a node calls (EventSinkConfig), and machine/events.proto the event
// messages it publishes. `make generate` rebuilds them
// with Debian's protoc and the pinned Go plugins (go tool).
package api

//go:generate sh -c "protoc -I . -I /usr/include --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative common/common.proto common/error.proto machine/machine.proto machine/image.proto machine/events.proto events/events.proto resource/resource.proto security/security.proto time/time.proto inspect/inspect.proto storage/storage.proto"
