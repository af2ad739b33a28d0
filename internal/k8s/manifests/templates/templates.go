package templates

// The templates follow Talos v1.8's (controllers/k8s/templates.go) and the
// objects Talos 1.11 builds (internal/k8stemplates), so a cluster created
// by talosbox has the objects, names and labels a Talos cluster has. Every
// interpolated value goes through json, or was validated (see data.go).

// bootstrapTokenTemplate is the token kubelets use to request their first
// client certificate.
const bootstrapTokenTemplate = `apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-{{ .TokenID }}
  namespace: kube-system
type: bootstrap.kubernetes.io/token
stringData:
  token-id: {{ json .TokenID }}
  token-secret: {{ json .TokenSecret }}
  usage-bootstrap-authentication: "true"
  # Extra groups to authenticate the token as; they must start with
  # "system:bootstrappers:".
  auth-extra-groups: system:bootstrappers:nodes
`

// csrNodeBootstrapTemplate lets bootstrap tokens and nodes create CSRs.
const csrNodeBootstrapTemplate = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system-bootstrap-node-bootstrapper
subjects:
- kind: Group
  name: system:bootstrappers:nodes
  apiGroup: rbac.authorization.k8s.io
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:node-bootstrapper
  apiGroup: rbac.authorization.k8s.io
`

// csrApproverTemplate has the csrapprover controller approve the client
// CSRs bootstrap tokens make.
const csrApproverTemplate = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system-bootstrap-approve-node-client-csr
subjects:
- kind: Group
  name: system:bootstrappers:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:nodeclient
  apiGroup: rbac.authorization.k8s.io
`

// csrRenewalTemplate has the csrapprover controller approve the CSRs
// nodes make to renew their own client certificates.
const csrRenewalTemplate = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system-bootstrap-node-renewal
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:selfnodeclient
  apiGroup: rbac.authorization.k8s.io
`

// kubeconfigInClusterTemplate is for pods that must reach the API server
// before the service network works (kube-proxy sets it up): the node's
// KubePrism when it is on, else the endpoint itself, with the pod's
// service-account token and CA. Talos's has a
// context without a name and no current-context, which clientcmd resolves
// only by accident; this one names both.
const kubeconfigInClusterTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kubeconfig-in-cluster
  namespace: kube-system
data:
  kubeconfig: |
    apiVersion: v1
    kind: Config
    clusters:
    - name: local
      cluster:
        server: {{ json .Server }}
        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    users:
    - name: service-account
      user:
        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
    contexts:
    - name: local
      context:
        cluster: local
        user: service-account
    current-context: local
`

// talosNodeRBACTemplate lets nodes read EndpointSlices (Talos 1.11 uses it
// for the API server endpoints a node load-balances to).
const talosNodeRBACTemplate = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:talos-nodes
  labels:
    kubernetes.io/bootstrapping: rbac-defaults
rules:
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:talos-nodes
  labels:
    kubernetes.io/bootstrapping: rbac-defaults
  annotations:
    rbac.authorization.kubernetes.io/autoupdate: "true"
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:talos-nodes
subjects:
- kind: Group
  name: system:nodes
  apiGroup: rbac.authorization.k8s.io
`

// coreDNSTemplate is Talos 1.11's CoreDNS: the Corefile (cache with the
// cluster domain's answers left to the kubernetes plugin), two replicas
// spread over nodes, allowed on control-plane nodes.
const coreDNSTemplate = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
  labels:
    kubernetes.io/bootstrapping: rbac-defaults
rules:
- apiGroups: [""]
  resources: ["endpoints", "services", "pods", "namespaces"]
  verbs: ["list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
  labels:
    kubernetes.io/bootstrapping: rbac-defaults
  annotations:
    rbac.authorization.kubernetes.io/autoupdate: "true"
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  Corefile: |
    .:53 {
        errors
        health {
            lameduck 5s
        }
        ready
        log . {
            class error
        }
        prometheus :9153

        kubernetes {{ .DNSDomain }} in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
            ttl 30
        }
        forward . /etc/resolv.conf {
           max_concurrent 1000
        }
        cache 30 {
           disable success {{ .DNSDomain }}
           disable denial {{ .DNSDomain }}
        }
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels:
    k8s-app: kube-dns
    kubernetes.io/name: CoreDNS
spec:
  replicas: 2
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
  selector:
    matchLabels:
      k8s-app: kube-dns
  template:
    metadata:
      labels:
        k8s-app: kube-dns
      annotations:
        io.containerd.runc.v2.group: kube-system
    spec:
      nodeSelector:
        kubernetes.io/os: linux
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm:
              labelSelector:
                matchExpressions:
                - key: k8s-app
                  operator: In
                  values: ["kube-dns"]
              topologyKey: kubernetes.io/hostname
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      - key: node.cloudprovider.kubernetes.io/uninitialized
        operator: Exists
        effect: NoSchedule
      containers:
      - name: coredns
        image: {{ json .CoreDNSImage }}
        imagePullPolicy: IfNotPresent
        resources:
          limits:
            memory: 170Mi
          requests:
            cpu: 100m
            memory: 70Mi
        env:
        - name: GOMEMLIMIT
          value: 161MiB
        args: ["-conf", "/etc/coredns/Corefile"]
        volumeMounts:
        - name: config-volume
          mountPath: /etc/coredns
          readOnly: true
        ports:
        - name: dns
          protocol: UDP
          containerPort: 53
        - name: dns-tcp
          protocol: TCP
          containerPort: 53
        - name: metrics
          protocol: TCP
          containerPort: 9153
        livenessProbe:
          httpGet:
            path: /health
            port: 8080
            scheme: HTTP
          initialDelaySeconds: 60
          timeoutSeconds: 5
          successThreshold: 1
          failureThreshold: 5
        # Talos's probe has the default 10 s period: a replica whose first
        # probe came before its kubernetes plugin synced was Ready 10 s
        # after it started (measured). 2 s finds it Ready at once, and 15
        # failures keep the default 30 s before a replica leaves the
        # Service's endpoints.
        readinessProbe:
          httpGet:
            path: /ready
            port: 8181
            scheme: HTTP
          periodSeconds: 2
          failureThreshold: 15
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            add: ["NET_BIND_SERVICE"]
            drop: ["ALL"]
          readOnlyRootFilesystem: true
      dnsPolicy: Default
      volumes:
      - name: config-volume
        configMap:
          name: coredns
          items:
          - key: Corefile
            path: Corefile
`

// coreDNSServiceTemplate is kube-dns at the DNS service IP(s) the kubelet
// hands pods as their resolver.
const coreDNSServiceTemplate = `apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: "9153"
  labels:
    k8s-app: kube-dns
    kubernetes.io/cluster-service: "true"
    kubernetes.io/name: CoreDNS
spec:
  selector:
    k8s-app: kube-dns
  clusterIP: {{ json (index .DNSServiceIPs 0).IP }}
  clusterIPs:
  {{- range .DNSServiceIPs }}
  - {{ json .IP }}
  {{- end }}
  ipFamilies:
  {{- range .DNSServiceIPs }}
  - {{ .Family }}
  {{- end }}
  ipFamilyPolicy: {{ if gt (len .DNSServiceIPs) 1 }}RequireDualStack{{ else }}SingleStack{{ end }}
  ports:
  - name: dns
    port: 53
    protocol: UDP
  - name: dns-tcp
    port: 53
    protocol: TCP
  - name: metrics
    port: 9153
    protocol: TCP
`
