#!/usr/bin/env bash
# Brings this machine to the state the test suites need: the Debian packages
# installed and MariaDB (127.0.0.1:3306), RabbitMQ (127.0.0.1:5672) and a
# Swift all-in-one (scripts/swift-aio.sh, 127.0.0.1:28080) answering.
# Then it builds the lab's deploy ISO into bin/cache/deploy-iso (once: the
# file is named by a digest of its inputs; tests/lab/deployiso).
# Idempotent and quick when everything is already there; fails loudly
# (non-zero exit, a message on stderr) when something cannot be made ready
# within its time bound. Services are checked by port, not by process
# name: exited processes can linger as zombies here.
set -euo pipefail

# One package per line, with the suites that need it.
PACKAGES=(
	mariadb-server   # db, conductor, api-service, e2e
	rabbitmq-server  # rpc, e2e
	tgt              # deploy/iscsi, deploy/agent: iSCSI targets (tgtd, tgtadm)
	libiscsi-bin     # deploy/iscsi: iscsi-inq, iscsi-readcapacity16 cross-checks
	qemu-utils       # deploy: qemu-img, qemu-io build and check images
	qemu-block-extra # deploy/iscsi: qemu-img over iscsi:// for cross-checks
	openipmi         # tests/lab: ipmi_sim BMCs
	ipmitool         # conductor/driver/ipmi, tests/lab
	e2fsprogs        # deploy/disk: mkfs.ext4, fsck.ext4
	xfsprogs         # deploy/disk: xfs root filesystems
	dosfstools       # deploy/disk, deploy/floppy: mkfs.vfat, fsck.vfat
	mtools           # deploy/floppy: mdir, mtype, mcopy read the floppy images back; deploy/bootloader: mcopy writes the ESP
	fdisk            # deploy/disk: sfdisk layout checks
	gdisk            # deploy/disk: sgdisk -v
	grub-pc-bin      # deploy/bootloader, tests/e2e/deploy: GRUB (BIOS) in test images
	grub-efi-amd64-bin # deploy/bootloader, tests/e2e/deploy: GRUB (UEFI) in test images; deploy/bootiso: grubx64.efi
	grub2-common     # deploy/bootloader, tests/e2e/deploy: grub-install
	udev             # deploy/bootloader: udevadm, which grub-install runs
	util-linux       # deploy/disk, deploy/agent: blkid, wipefs
	xorriso          # tests/e2e/deploy: config drive ISO; deploy/bootiso: builds boot ISOs
	isolinux         # deploy/bootiso: isolinux.bin, the BIOS boot loader of boot ISOs
	syslinux-common  # deploy/bootiso: ldlinux.c32, which isolinux.bin loads
	genisoimage      # deploy/bootiso: isoinfo checks Rock Ridge and Joliet
	qemu-system-x86  # deploy/bootiso: boots the ISOs on SeaBIOS and OVMF
	ovmf             # deploy/bootiso: UEFI firmware for those boots
	wrk              # tests/bench (make bench): API read throughput
	swift            # conductor/vmedia/publish: Swift all-in-one (scripts/swift-aio.sh)
	swift-proxy      #   proxy with tempauth + tempurl
	swift-account    #   account server
	swift-container  #   container server
	swift-object     #   object server
	memcached        #   tempauth's token store
	keystone         # tests/e2e/keystone: a real Keystone (tests/harness/realkeystone), Fernet tokens on MariaDB
	python3-pymysql  #   its MySQL driver
	uwsgi-plugin-python3 #   serves its WSGI app
)

LOG_TAG=setup
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# The suites log in as root over TCP without a password. A fresh Debian
# install lets root in only through the unix socket; grant the TCP login
# through that socket (as the OS root) when it is refused.
mariadb_root_login() {
	mariadb --host=127.0.0.1 --user=root -e 'SELECT 1' >/dev/null 2>&1 && return 0
	log "allowing root@127.0.0.1 without a password (test machine)"
	mariadb --user=root -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION; FLUSH PRIVILEGES;" ||
		die "cannot grant root@127.0.0.1 (run as root on the database host)"
	mariadb --host=127.0.0.1 --user=root -e 'SELECT 1' >/dev/null 2>&1 ||
		die "root still cannot log in over 127.0.0.1:3306"
}

start_mariadb() {
	port_open 3306 && return 0
	log "starting MariaDB"
	install -d -o mysql -g mysql /run/mysqld
	start-stop-daemon --start --oknodo --background \
		--pidfile /run/mysqld/mysqld.pid --exec /usr/sbin/mariadbd -- --user=mysql
	wait_port 3306 60 MariaDB
	local deadline=$((SECONDS + 30))
	until mariadb-admin --host=127.0.0.1 --user=root ping >/dev/null 2>&1; do
		((SECONDS < deadline)) || die "MariaDB port is open but 'mariadb-admin ping' fails"
		sleep 0.5
	done
}

start_rabbitmq() {
	port_open 5672 && return 0
	# A node whose app was stopped (rabbitmqctl stop_app) still answers on
	# the distribution port: restart the app rather than a second node.
	if timeout 20 rabbitmq-diagnostics -q ping >/dev/null 2>&1; then
		log "RabbitMQ node is up with its app stopped: starting the app"
		timeout 60 rabbitmqctl start_app >/dev/null || die "rabbitmqctl start_app failed"
		wait_port 5672 30 RabbitMQ
		return 0
	fi
	log "starting RabbitMQ"
	epmd -address 127.0.0.1 -daemon
	RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 rabbitmq-server -detached
	timeout 120 rabbitmqctl await_startup >/dev/null || die "RabbitMQ did not finish starting within 120 s"
	wait_port 5672 30 RabbitMQ
}

install_packages
start_mariadb
mariadb_root_login
start_rabbitmq
"$(dirname "$0")/swift-aio.sh" >/dev/null
# The lab, tests/e2e/vmedia and the bench copy this ISO instead of each
# building their own (they still build it when it is missing).
root=$(cd "$(dirname "$0")/.." && pwd)
iso=$(cd "$root/tests" && go run ./lab/cmd/lab-deploy-iso "$root") || die "cannot build the lab's deploy ISO"
log "lab deploy ISO: $iso"
log "MariaDB on 127.0.0.1:3306, RabbitMQ on 127.0.0.1:5672 and Swift on 127.0.0.1:28080 are up"
