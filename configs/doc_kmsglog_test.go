package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const kmsgLogDoc = "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: remote-log\nurl: tcp://192.168.3.7:3478/\n"

func TestKmsgLogConfig(t *testing.T) {
	t.Parallel()

	obsDecode(t, []obsDecodeCase{
		{name: "good", docs: kmsgLogDoc},
		{
			name: "an unknown field",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nendpoint: tcp://h:1/\n",
			want: `line +4: unknown field "endpoint" in KmsgLogConfig["a"]`,
		},
		{
			name: "a url of the wrong type",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nurl: [tcp://h:1/]\n",
			want: `line +4: KmsgLogConfig["a"].url: expected a single value, got a sequence`,
		},
	})

	obsCheck(t, []obsCheckCase{
		{name: "tcp", docs: kmsgLogDoc},
		{name: "udp, no path, two destinations", docs: kmsgLogDoc + "---\napiVersion: v1alpha1\nkind: KmsgLogConfig\nname: b\nurl: udp://[fd00::1]:514\n"},
		{name: "in a container too", mode: configs.ModeContainer, docs: kmsgLogDoc},
		{
			name: "no name",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nurl: tcp://h:1/\n",
			want: []string{`line +2: KmsgLogConfig[""].name: name is required: a name for this destination (remote-log)`},
		},
		{
			name: "no url",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\n",
			want: []string{`line +2: KmsgLogConfig["a"].url: url is required: where to send the kernel log (tcp://192.168.3.7:3478/ or udp://...)`},
		},
		{
			name: "another scheme",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nurl: http://h:1/\n",
			want: []string{`line +4: KmsgLogConfig["a"].url: invalid kmsg log URL "http://h:1/": scheme must be tcp or udp`},
		},
		{
			name: "a path",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nurl: tcp://h:1/logs\n",
			want: []string{`line +4: KmsgLogConfig["a"].url: url "tcp://h:1/logs" has a path (/logs): the path must be empty (tcp://host:port/)`},
		},
		{
			name: "no port",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nurl: tcp://h/\n",
			want: []string{`line +4: KmsgLogConfig["a"].url: url "tcp://h/" has no port: the port is required (tcp://host:port/)`},
		},
		{
			name: "no host",
			docs: "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: a\nurl: tcp://:1/\n",
			want: []string{`line +4: KmsgLogConfig["a"].url: invalid kmsg log URL "tcp://:1/": host is missing`},
		},
	})

	t.Run("fold", func(t *testing.T) {
		t.Parallel()

		cfg := obsDecoded(t, kmsgLogDoc)

		docs := configs.DocumentsOf[*configs.KmsgLogConfig](cfg)
		if len(docs) != 1 || docs[0].URL != "tcp://192.168.3.7:3478/" {
			t.Errorf("DocumentsOf: %+v", docs)
		}

		// Nothing in v1alpha1 says it: the effective config is the
		// v1alpha1 document's.
		if changes, err := configs.Compare(obsDecoded(t, ""), configs.NewConfig(cfg.V1Alpha1())); err != nil || len(changes) != 0 {
			t.Errorf("the effective v1alpha1 fields changed: %v %v", changes, err)
		}

		obsChange(t, kmsgLogDoc, "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: remote-log\nurl: udp://192.168.3.7:3478/\n",
			`KmsgLogConfig["remote-log"].url`, true)
	})

	t.Run("encode", func(t *testing.T) {
		t.Parallel()

		obsRoundTrip(t, "kind: KmsgLogConfig\nurl: tcp://192.168.3.7:3478/\napiVersion: v1alpha1\nname: remote-log\n", kmsgLogDoc)
	})

	t.Run("patch", func(t *testing.T) {
		t.Parallel()

		cfg := obsPatched(t, kmsgLogDoc, "apiVersion: v1alpha1\nkind: KmsgLogConfig\nname: remote-log\nurl: udp://10.0.0.1:514/\n")
		if docs := configs.DocumentsOf[*configs.KmsgLogConfig](cfg); len(docs) != 1 || docs[0].URL != "udp://10.0.0.1:514/" {
			t.Errorf("strategic merge: %+v", docs)
		}

		cfg = obsPatched(t, kmsgLogDoc, `[{"op": "add", "path": "/KmsgLogConfig/second", "value": {"url": "tcp://10.0.0.2:5000/"}}]`)
		if docs := configs.DocumentsOf[*configs.KmsgLogConfig](cfg); len(docs) != 2 || docs[1].Name != "second" || docs[1].URL != "tcp://10.0.0.2:5000/" {
			t.Errorf("JSON patch: %+v", docs)
		}
	})
}
