#!/usr/bin/env bash
# The main job, at this stage of the project: the built binary, its applet
# links, and what each applet answers. The local node and cluster arrive
# with machined (issue 4) and `talosctl cluster create` (issue 7).
set -euo pipefail
bin=$1 links=$2

echo
"$bin" --version
echo
"$bin" --help
echo
echo "applet links in $links:"
ls -l "$links" | awk 'NR > 1 {print "  " $9 " -> " $11}'
echo
echo "\$ $links/talosctl version --client"
"$links/talosctl" version --client
echo
echo "Try: $links/talosctl --help, $links/talosctl completion bash, $links/apid --help"
