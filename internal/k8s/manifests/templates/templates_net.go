package templates

// kubeProxyTemplate is Talos's kube-proxy: a host-network DaemonSet on
// every node, reaching the API server through the in-cluster kubeconfig
// (the service network is what it sets up). The hostPath is /lib/modules
// as in Talos 1.8; flipping it between releases is what broke Talos users'
// upgrades (siderolabs/talos#11250), so it stays put.
//
// A restarted kube-proxy (an upgrade rolls it) keeps the rules the old
// one left until its first sync replaces them, so Services stay routed
// throughout; that needs /etc/protocols in its image (internal/imagebuild),
// without which nftables mode deleted the service-ips map's elements on
// every restart.
const kubeProxyTemplate = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-proxy
  namespace: kube-system
  labels:
    tier: node
    k8s-app: kube-proxy
spec:
  selector:
    matchLabels:
      tier: node
      k8s-app: kube-proxy
  template:
    metadata:
      labels:
        tier: node
        k8s-app: kube-proxy
      annotations:
        io.containerd.runc.v2.group: kube-system
        {{- if .ProxyConfig }}
        talos.dev/kube-proxy-config-checksum: {{ json .ProxyConfigChecksum }}
        {{- end }}
    spec:
      containers:
      - name: kube-proxy
        image: {{ json .ProxyImage }}
        command:
        - /usr/local/bin/kube-proxy
        {{- range .ProxyArgs }}
        - {{ json . }}
        {{- end }}
        {{- if or .ProxyResources.Requests .ProxyResources.Limits }}
        resources: {{ json .ProxyResources }}
        {{- end }}
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        - name: POD_IP
          valueFrom:
            fieldRef:
              fieldPath: status.podIP
        securityContext:
          privileged: true
        volumeMounts:
        - mountPath: /lib/modules
          name: lib-modules
          readOnly: true
        - mountPath: /etc/ssl/certs
          name: ssl-certs-host
          readOnly: true
        - name: kubeconfig
          mountPath: /etc/kubernetes
          readOnly: true
        {{- if .ProxyConfig }}
        - name: kube-proxy-config
          mountPath: /var/lib/kube-proxy
          readOnly: true
        {{- end }}
      hostNetwork: true
      priorityClassName: system-cluster-critical
      serviceAccountName: kube-proxy
      tolerations:
      - effect: NoSchedule
        operator: Exists
      - effect: NoExecute
        operator: Exists
      volumes:
      - name: lib-modules
        hostPath:
          path: /lib/modules
      - name: ssl-certs-host
        hostPath:
          path: /etc/ssl/certs
      - name: kubeconfig
        configMap:
          name: kubeconfig-in-cluster
      {{- if .ProxyConfig }}
      - name: kube-proxy-config
        configMap:
          name: kube-proxy-config
      {{- end }}
  updateStrategy:
    rollingUpdate:
      maxUnavailable: 1
    type: RollingUpdate
{{- if .ProxyConfig }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-proxy-config
  namespace: kube-system
  labels:
    tier: node
    k8s-app: kube-proxy
data:
  config.conf: {{ json .ProxyConfig }}
{{- end }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kube-proxy
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kube-proxy
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-proxier # a role the API server creates itself
subjects:
- kind: ServiceAccount
  name: kube-proxy
  namespace: kube-system
`

// flannelTemplate is Talos's flannel (ClusterRole, binding, ServiceAccount,
// ConfigMap, DaemonSet "kube-flannel"), adapted to talosbox's image, which
// is built FROM scratch and so has no cp or shell: the image holds
// flanneld at /opt/bin/flanneld and the flannel CNI plugin at
// /opt/cni/bin/flannel, and the init containers run the plugin's install
// mode (`flannel install SRC DST`, an atomic copy) to put itself into the
// host's /opt/cni/bin and the conflist into /etc/cni/net.d.
const flannelTemplate = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: flannel
  labels:
    k8s-app: flannel
rules:
- apiGroups: [""]
  resources: ["pods", "nodes", "namespaces"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["nodes/status"]
  verbs: ["patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: flannel
  labels:
    k8s-app: flannel
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: flannel
subjects:
- kind: ServiceAccount
  name: flannel
  namespace: kube-system
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: flannel
  namespace: kube-system
  labels:
    k8s-app: flannel
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kube-flannel-cfg
  namespace: kube-system
  labels:
    tier: node
    k8s-app: flannel
data:
  cni-conf.json: {{ json .FlannelCNIConf }}
  net-conf.json: {{ json .FlannelNetConf }}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-flannel
  namespace: kube-system
  labels:
    tier: node
    k8s-app: flannel
spec:
  selector:
    matchLabels:
      tier: node
      k8s-app: flannel
  template:
    metadata:
      labels:
        tier: node
        k8s-app: flannel
      annotations:
        io.containerd.runc.v2.group: kube-system
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - key: kubernetes.io/os
                operator: In
                values: ["linux"]
      hostNetwork: true
      priorityClassName: system-node-critical
      serviceAccountName: flannel
      tolerations:
      - effect: NoSchedule
        operator: Exists
      - effect: NoExecute
        operator: Exists
      initContainers:
      - name: install-cni
        image: {{ json .FlannelImage }}
        command: ["/opt/cni/bin/flannel", "install", "/opt/cni/bin/flannel", "/host/opt/cni/bin/flannel"]
        volumeMounts:
        - name: cni-plugin
          mountPath: /host/opt/cni/bin
      - name: install-config
        image: {{ json .FlannelImage }}
        command: ["/opt/cni/bin/flannel", "install", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"]
        volumeMounts:
        - name: cni
          mountPath: /etc/cni/net.d
        - name: flannel-cfg
          mountPath: /etc/kube-flannel/
      containers:
      - name: kube-flannel
        image: {{ json .FlannelImage }}
        command: ["/opt/bin/flanneld"]
        args:
        {{- range .FlannelArgs }}
        - {{ json . }}
        {{- end }}
        env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        - name: EVENT_QUEUE_DEPTH
          value: "5000"
        - name: CONT_WHEN_CACHE_NOT_READY
          value: "false"
        {{- if .KubePrismPort }}
        - name: KUBERNETES_SERVICE_HOST
          value: "127.0.0.1"
        - name: KUBERNETES_SERVICE_PORT
          value: {{ json (printf "%d" .KubePrismPort) }}
        {{- end }}
        resources: {{ json .FlannelResources }}
        securityContext:
          privileged: true
          capabilities:
            add: ["NET_ADMIN", "NET_RAW"]
        volumeMounts:
        - name: run
          mountPath: /run/flannel
        - name: flannel-cfg
          mountPath: /etc/kube-flannel/
        - name: lib-modules
          mountPath: /lib/modules
          readOnly: true
        - name: xtables-lock
          mountPath: /run/xtables.lock
      volumes:
      - name: run
        hostPath:
          path: /run/flannel
      - name: cni-plugin
        hostPath:
          path: /opt/cni/bin
      - name: cni
        hostPath:
          path: /etc/cni/net.d
      - name: lib-modules
        hostPath:
          path: /lib/modules
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
      - name: flannel-cfg
        configMap:
          name: kube-flannel-cfg
`
