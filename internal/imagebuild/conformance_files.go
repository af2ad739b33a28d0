package imagebuild

// httpd.conf for Debian's apache2 laid out as the httpd image has it
// (ServerRoot /usr/local/apache2, htdocs, logs): the same listener,
// document root, index and log streams as upstream's httpd.conf, loading
// only the modules Debian builds as shared objects that serve a static
// site (the core, unixd and log_config are built in).
const httpdConf = `ServerRoot "/usr/local/apache2"
Listen 80
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule authz_host_module /usr/lib/apache2/modules/mod_authz_host.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule alias_module /usr/lib/apache2/modules/mod_alias.so
LoadModule env_module /usr/lib/apache2/modules/mod_env.so
LoadModule headers_module /usr/lib/apache2/modules/mod_headers.so
LoadModule status_module /usr/lib/apache2/modules/mod_status.so
User daemon
Group daemon
ServerAdmin you@example.com
ServerName localhost
PidFile logs/httpd.pid
Mutex file:logs default
<Directory />
    AllowOverride none
    Require all denied
</Directory>
DocumentRoot "/usr/local/apache2/htdocs"
<Directory "/usr/local/apache2/htdocs">
    Options Indexes FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
DirectoryIndex index.html
<Files ".ht*">
    Require all denied
</Files>
ErrorLog /proc/self/fd/2
LogLevel warn
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog /proc/self/fd/1 common
TypesConfig /etc/mime.types
AddType application/x-compress .Z
AddType application/x-gzip .gz .tgz
`

// httpdFiles are the httpd image's own files over Debian's apache2-bin:
// its config, page, log directory and the httpd-foreground command that
// is its CMD.
func httpdFiles() []entry {
	return []entry{
		{path: "/usr/local/apache2/conf/httpd.conf", mode: 0o644, data: httpdConf},
		{path: "/usr/local/apache2/htdocs/index.html", mode: 0o644, data: "<html><body><h1>It works!</h1></body></html>\n"},
		{path: "/usr/local/apache2/logs", dir: true, mode: 0o755},
		{path: "/usr/local/apache2/modules", link: "/usr/lib/apache2/modules", mode: 0o777},
		{path: "/usr/local/apache2/bin/httpd", mode: 0o755, data: "#!/bin/sh\nexec /usr/sbin/apache2 -d /usr/local/apache2 -f conf/httpd.conf \"$@\"\n"},
		{path: "/usr/local/apache2/bin/httpd-foreground", mode: 0o755, data: "#!/bin/sh\nset -e\nrm -f /usr/local/apache2/logs/httpd.pid\nexec /usr/local/apache2/bin/httpd -DFOREGROUND \"$@\"\n"},
		{path: "/usr/local/bin/httpd", link: "/usr/local/apache2/bin/httpd", mode: 0o777},
		{path: "/usr/local/bin/httpd-foreground", link: "/usr/local/apache2/bin/httpd-foreground", mode: 0o777},
	}
}

// nginx.conf and the default server as the nginx image ships them: root
// master, workers as nginx, port 80, /usr/share/nginx/html (Debian's
// nginx-common puts its welcome page there), logs to the container's
// streams.
const (
	nginxConf = `user nginx;
worker_processes auto;
error_log /var/log/nginx/error.log notice;
pid /run/nginx.pid;
events {
    worker_connections 1024;
}
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format main '$remote_addr - $remote_user [$time_local] "$request" '
                    '$status $body_bytes_sent "$http_referer" '
                    '"$http_user_agent" "$http_x_forwarded_for"';
    access_log /var/log/nginx/access.log main;
    sendfile on;
    keepalive_timeout 65;
    include /etc/nginx/conf.d/*.conf;
}
`
	nginxDefault = `server {
    listen 80;
    listen [::]:80;
    server_name localhost;
    location / {
        root /usr/share/nginx/html;
        index index.html index.htm;
    }
    error_page 500 502 503 504 /50x.html;
    location = /50x.html {
        root /usr/share/nginx/html;
    }
}
`
)

func nginxFiles() []entry {
	return []entry{
		{path: "/etc/nginx/nginx.conf", mode: 0o644, data: nginxConf},
		{path: "/etc/nginx/conf.d/default.conf", mode: 0o644, data: nginxDefault},
		{path: "/var/log/nginx", dir: true, mode: 0o755},
		{path: "/var/log/nginx/access.log", link: "/dev/stdout", mode: 0o777},
		{path: "/var/log/nginx/error.log", link: "/dev/stderr", mode: 0o777},
		{path: "/var/lib/nginx", dir: true, mode: 0o755},
		{path: "/var/cache/nginx", dir: true, mode: 0o755},
		{path: "/run", dir: true, mode: 0o755},
	}
}
