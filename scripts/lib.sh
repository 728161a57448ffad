# Shell functions scripts/setup.sh and scripts/swift-aio.sh share. The
# sourcing script sets LOG_TAG (the prefix of its messages) and PACKAGES
# (the Debian packages install_packages makes sure of).

log() { echo "$LOG_TAG: $*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_port PORT SECONDS NAME [HINT]: HINT (e.g. where the log is) ends
# the error message.
wait_port() {
	local deadline=$((SECONDS + $2))
	until port_open "$1"; do
		((SECONDS < deadline)) || die "$3 did not open 127.0.0.1:$1 within $2 s${4:+ ($4)}"
		sleep 0.3
	done
}

install_packages() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	[[ $(id -u) == 0 ]] || die "packages missing (${missing[*]}) and not root: install them first"
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	# policy-rc.d keeps the packages' init scripts from trying to start
	# services (no init system here); this script starts them itself.
	local policy=/usr/sbin/policy-rc.d created_policy=
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		created_policy=1
	fi
	local rc=0
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
	[[ -n $created_policy ]] && rm -f "$policy"
	((rc == 0)) || die "apt-get install ${missing[*]} failed (exit $rc)"
}
