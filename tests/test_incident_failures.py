"""Incidents of failing hardware, filesystems and services, told from logs
written the way the kernel, systemd, nginx, PHP-FPM and PostgreSQL write
them (each line's source is named beside it): rank 1 has the right
category and names the disk, the DIMM, the unit or the port; boot-time
noise makes no incident."""
from __future__ import annotations

import shutil
import socket
import subprocess

import pytest

import sarsleuth


def _kernel(clock: str, uptime: float, message: str, host: str = "db1") -> str:
    # rsyslog's traditional format of an imklog line, the kernel's uptime stamp kept
    return f"Mar  3 {clock} {host} kernel: [{uptime:12.6f}] {message}"


def _systemd(clock: str, message: str, host: str = "web1") -> str:
    return f"Nov 24 {clock} {host} systemd[1]: {message}"


def _top(tmp_path, name: str, lines: list[str], **kw):
    (tmp_path / name).write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, **kw)
    assert case.incidents, [f.title for f in case.findings]
    return case, case.incidents[0]


#: one failed read as libata (drivers/ata/libata-eh.c ata_eh_link_report), the
#: SCSI disk (drivers/scsi/scsi_logging.c) and the block layer (block/blk-mq.c,
#: 5.3-5.13 blk_update_request) report it
def _failed_read(clock: str, uptime: float, sector: int) -> list[str]:
    return [_kernel(clock, uptime + d, m) for d, m in [
        (0.000, "ata1.00: exception Emask 0x0 SAct 0x40 SErr 0x0 action 0x0"),
        (0.001, "ata1.00: irq_stat 0x40000008"),
        (0.002, "ata1.00: failed command: READ FPDMA QUEUED"),
        (0.003, "ata1.00: cmd 60/08:30:98:26:c1/00:00:0d:00:00/40 tag 6 ncq dma 4096 in"),
        (0.003, "         res 41/40:00:9c:26:c1/00:00:0d:00:00/40 Emask 0x409 (media error) <F>"),
        (0.004, "ata1.00: status: { DRDY ERR }"),
        (0.005, "ata1.00: error: { UNC }"),
        (0.170, "ata1.00: configured for UDMA/133"),
        (0.171, "sd 0:0:0:0: [sda] tag#6 FAILED Result: hostbyte=DID_OK driverbyte=DRIVER_SENSE cmd_age=3s"),
        (0.172, "sd 0:0:0:0: [sda] tag#6 Sense Key : Medium Error [current]"),
        (0.173, "sd 0:0:0:0: [sda] tag#6 Add. Sense: Unrecovered read error - auto reallocate failed"),
        (0.174, "sd 0:0:0:0: [sda] tag#6 CDB: Read(10) 28 00 0d c1 26 98 00 00 08 00"),
        (0.175, f"blk_update_request: I/O error, dev sda, sector {sector} op 0x0:(READ) flags 0x80700 phys_seg 1 "
                "prio class 0"),
        (0.176, "ata1: EH complete"),
    ]]


def test_a_failing_disk_its_filesystem_gone_read_only_and_the_writes_refused_are_one_hardware_incident(tmp_path):
    """A disk's unreadable sectors, ext4 finding errors on it (fs/ext4/super.c),
    its journal aborted (fs/jbd2/journal.c), the filesystem remounted
    read-only, then nginx and PostgreSQL refused their writes (EROFS)."""
    lines = (_failed_read("10:00:01", 8100.392, 230762140) + _failed_read("10:00:04", 8103.576, 230762140)
             + [_kernel("10:00:04", 8103.900, "EXT4-fs error (device sda2): ext4_find_entry:1455: inode #7209462: "
                                              "comm nginx: reading directory lblock 0")]
             + _failed_read("10:00:07", 8106.102, 230762148)
             + [_kernel("10:00:07", 8106.400, "Aborting journal on device sda2-8."),
                _kernel("10:00:07", 8106.401, "EXT4-fs error (device sda2) in ext4_reserve_inode_write:5735: "
                                              "Journal has aborted"),
                _kernel("10:00:07", 8106.402, "EXT4-fs (sda2): Remounting filesystem read-only"),
                # nginx src/os/unix/ngx_files.c via its error.log copy in syslog; PostgreSQL's xlog.c
                'Mar  3 10:00:09 db1 nginx: 2024/03/03 10:00:09 [crit] 2212#2212: *41 open() '
                '"/var/log/nginx/access.log" failed (30: Read-only file system)',
                'Mar  3 10:00:10 db1 postgres[3301]: [7-1] PANIC:  could not write to file "pg_wal/xlogtemp.3301": '
                'Read-only file system'])
    case, top = _top(tmp_path, "kern.log", lines, year=2024)
    assert (top.category, top.cause) == ("hardware-error", "disk-error")
    assert top.title.startswith("Hardware errors on db1: Disk sda (ata1.00): 3 failed READ(s) at sectors 230762140, "
                                "230762148: media error (Unrecovered read error")
    disk = [f for f in top.findings if f.detector == "disk-error"][0]
    assert disk.title == ("Disk sda (ata1.00): 3 failed READ(s) at sectors 230762140, 230762148: media error "
                          "(Unrecovered read error - auto reallocate failed); READ FPDMA QUEUED failed 3 x (UNC) "
                          "over 6 s")
    assert disk.metrics["media_errors"] == 3 and disk.refs["sectors"] == [230762140, 230762148]
    roles = {f.detector: f.role for f in top.findings}
    assert roles == {"disk-error": "cause", "filesystem-error": "effect", "readonly-write": "effect"}
    fs = [f for f in top.findings if f.detector == "filesystem-error"][0]
    assert fs.title == ("ext4 on sda2: 2 error(s) (in ext4_find_entry, ext4_reserve_inode_write; comm nginx), "
                        "journal aborted, remounted read-only at 10:00:07")
    assert fs.severity == "critical"
    assert "smartctl -a /dev/sda" in top.recommendations[0]
    assert any("e2fsck -f" in r and "unmount sda2" in r for r in top.recommendations)
    # one event per report: the three exceptions, three sense keys, three block errors
    kinds = case.events["kind"].value_counts()
    assert (kinds["ata-error"], kinds["scsi-medium-error"], kinds["block-io-error"]) == (3, 3, 3)
    first = case.events[case.events["kind"] == "ata-error"].iloc[0]
    assert "ata1.00: error: { UNC }" in first["detail"] and "(media error)" in first["detail"]


def test_corrected_errors_of_one_dimm_are_a_hardware_incident_naming_the_dimm(tmp_path):
    """sb_edac's decoding of corrected errors on one DIMM over three hours
    (drivers/edac/edac_mc.c edac_ce_error, arch/x86/kernel/cpu/mce/core.c
    mce_notify_irq), beside one slow upstream request."""
    lines = []
    for i in range(12):
        clock = f"{2 + i // 4:02d}:{(i % 4) * 15:02d}:07"
        up = 3600.0 + i * 900
        lines += [_kernel(clock, up, "mce: [Hardware Error]: Machine check events logged", host="db2"),
                  _kernel(clock, up + 0.001, "EDAC sbridge MC0: HANDLING MCE MEMORY ERROR", host="db2"),
                  _kernel(clock, up + 0.002, "EDAC sbridge MC0: CPU 0: Machine Check Event: 0 Bank 5: "
                                             "8c00004000010091", host="db2"),
                  _kernel(clock, up + 0.003, "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 "
                                             "(channel:1 slot:0 page:0x8fb4f offset:0x300 grain:32 syndrome:0x0 - "
                                             "area:DRAM err_code:0001:0091 socket:0 ha:0 channel_mask:2 rank:1)",
                          host="db2")]
    case, top = _top(tmp_path, "kern.log", lines, year=2024)
    assert (top.category, top.cause) == ("hardware-error", "machine-check")
    assert top.title.startswith("Hardware errors on db2: 12 corrected memory error(s) on "
                                "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (MC0 channel:1 slot:0)")
    f = top.findings[0]
    assert f.severity == "high" and f.metrics["corrected"] == 12 and f.metrics["uncorrected"] == 0
    assert top.recommendations[0].startswith("Replace the DIMM EDAC names (CPU_SrcID#0_Ha#0_Chan#1_DIMM#0)")


def test_a_restart_loop_is_a_service_failure_naming_the_unit_and_its_result(tmp_path):
    """systemd v252 (Debian 12): PHP-FPM's master exits 78 on a bad pool
    file, Restart=on-failure brings it back until StartLimitBurst (src/core/
    service.c, unit.c, job.c); nginx in front answers for the missing
    socket (ngx_event_connect.c)."""
    lines = []
    for k in range(5):
        s = 10 + k * 3
        lines += [_systemd(f"14:10:{s:02d}", "Starting php8.2-fpm.service - The PHP 8.2 FastCGI Process Manager..."),
                  f"Nov 24 14:10:{s:02d} web1 php-fpm8.2[{4400 + k}]: [24-Nov-2026 14:10:{s:02d}] ERROR: "
                  "[/etc/php/8.2/fpm/pool.d/www.conf:23] value is NULL for a ZEND_INI_PARSER_ENTRY",
                  _systemd(f"14:10:{s:02d}", "php8.2-fpm.service: Main process exited, code=exited, status=78/CONFIG"),
                  _systemd(f"14:10:{s:02d}", "php8.2-fpm.service: Failed with result 'exit-code'."),
                  _systemd(f"14:10:{s:02d}", "Failed to start php8.2-fpm.service - The PHP 8.2 FastCGI Process "
                                             "Manager.")]
        if k < 4:
            lines.append(_systemd(f"14:10:{s + 1:02d}", f"php8.2-fpm.service: Scheduled restart job, restart counter "
                                                         f"is at {k + 1}."))
    lines += [_systemd("14:10:23", "php8.2-fpm.service: Start request repeated too quickly."),
              _systemd("14:10:23", "php8.2-fpm.service: Failed with result 'exit-code'."),
              _systemd("14:10:23", "Failed to start php8.2-fpm.service - The PHP 8.2 FastCGI Process Manager.")]
    case, top = _top(tmp_path, "syslog", lines)
    assert (top.category, top.cause) == ("service-failure", "service-failure")
    assert top.title.startswith("Service failure on web1: php8.2-fpm.service down after 5 failure(s) (result "
                                "'exit-code', status=78/CONFIG) and 4 restart(s)")
    assert top.findings[0].title == ("php8.2-fpm.service down after 5 failure(s) (result 'exit-code', "
                                     "status=78/CONFIG) and 4 restart(s): systemd gave up at 14:10:23 (start request "
                                     "repeated too quickly)")
    assert top.severity == "critical"
    advice = " ".join(top.recommendations)
    assert "journalctl -u php8.2-fpm.service -b" in advice and "systemctl reset-failed php8.2-fpm.service" in advice


def test_rhel7_systemd_words_for_the_same_loop(tmp_path):
    """systemd 219 (RHEL 7) writes the unit inside its sentences and says
    'holdoff' and 'entered failed state'."""
    lines = []
    for k in range(3):
        c = f"09:00:{k * 2:02d}"
        lines += [f"Jan  7 {c} cc7 systemd[1]: docker.service: main process exited, code=exited, status=1/FAILURE",
                  f"Jan  7 {c} cc7 systemd[1]: Failed to start Docker Application Container Engine.",
                  f"Jan  7 {c} cc7 systemd[1]: Unit docker.service entered failed state.",
                  f"Jan  7 {c} cc7 systemd[1]: docker.service failed.",
                  f"Jan  7 09:00:{k * 2 + 1:02d} cc7 systemd[1]: docker.service holdoff time over, scheduling restart."]
    lines += ["Jan  7 09:00:06 cc7 systemd[1]: start request repeated too quickly for docker.service",
              "Jan  7 09:00:06 cc7 systemd[1]: Failed to start Docker Application Container Engine.",
              "Jan  7 09:00:06 cc7 systemd[1]: Unit docker.service entered failed state.",
              "Jan  7 09:00:06 cc7 systemd[1]: docker.service failed."]
    case, top = _top(tmp_path, "messages", lines, year=2020)
    assert top.category == "service-failure"
    f = top.findings[0]
    assert f.title == ("docker.service down after 3 failure(s) (status=1/FAILURE) and 3 restart(s): systemd gave up "
                       "at 09:00:06 (start request repeated too quickly)")


def test_an_oom_kill_of_a_service_its_result_and_the_502s_are_one_memory_incident(tmp_path):
    """The kernel kills a PHP-FPM worker (mm/oom_kill.c, 5.x), systemd's
    OOMPolicy=stop takes the unit down ('oom-kill', v243+) and restarts it;
    meanwhile nginx finds no socket to connect to."""
    syslog = [
        "Nov 24 14:20:01 web1 kernel: [ 9000.100000] php-fpm8.2 invoked oom-killer: gfp_mask=0x140cca"
        "(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0",
        "Nov 24 14:20:01 web1 kernel: [ 9000.100300] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
        "mems_allowed=0,global_oom,task_memcg=/system.slice/php8.2-fpm.service,task=php-fpm8.2,pid=4410,uid=33",
        "Nov 24 14:20:01 web1 kernel: [ 9000.100400] Out of memory: Killed process 4410 (php-fpm8.2) "
        "total-vm:2345678kB, anon-rss:1987654kB, file-rss:0kB, shmem-rss:0kB, UID:33 pgtables:4000kB oom_score_adj:0",
        _systemd("14:20:01", "php8.2-fpm.service: A process of this unit has been killed by the OOM killer."),
        _systemd("14:20:01", "php8.2-fpm.service: Failed with result 'oom-kill'."),
        _systemd("14:20:01", "php8.2-fpm.service: Consumed 2min 3.456s CPU time."),
        _systemd("14:20:07", "php8.2-fpm.service: Scheduled restart job, restart counter is at 1."),
        _systemd("14:20:07", "Started php8.2-fpm.service - The PHP 8.2 FastCGI Process Manager."),
    ]
    (tmp_path / "syslog").write_text("\n".join(syslog) + "\n")
    error_log = [f"2026/11/24 14:20:0{s} [crit] 2212#2212: *{60 + s} connect() to unix:/run/php/php8.2-fpm.sock "
                 "failed (2: No such file or directory) while connecting to upstream, client: 10.1.2.3, server: "
                 'shop, request: "GET /cart HTTP/1.1", upstream: "fastcgi://unix:/run/php/php8.2-fpm.sock:", '
                 'host: "shop"' for s in range(2, 7)]
    (tmp_path / "error.log").write_text("\n".join(error_log) + "\n")
    case = sarsleuth.load(tmp_path)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("memory-exhaustion", "oom-kill")
    roles = {f.detector: f.role for f in top.findings}
    assert roles == {"oom-kill": "cause", "service-failure": "effect", "upstream-down": "effect"}
    unit = [f for f in top.findings if f.detector == "service-failure"][0]
    assert unit.title == "php8.2-fpm.service failed 1 x (result 'oom-kill'), 1 restart(s)"
    assert len(case.incidents) == 1


def _real_nginx_bind_failure(tmp_path, port: int) -> str:
    """nginx's own error.log when its port is taken: started with the
    port held, it tries five times, then 'still could not bind()'."""
    exe = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if shutil.os.path.exists(p)), None)
    if exe is None:
        pytest.skip("nginx is not installed (the CI script installs Debian's nginx)")
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    (prefix / "nginx.conf").write_text(
        f"pid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\nevents {{}}\n"
        f"http {{ access_log off; server {{ listen 127.0.0.1:{port}; }} }}\n")
    done = subprocess.run([exe, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-e", str(prefix / "error.log"),
                           "-g", "daemon off;"], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    return (prefix / "error.log").read_text()


def test_a_port_taken_at_start_names_the_port_and_its_holder_from_the_bundle(tmp_path):
    """A real nginx started while another process listens on its port, in
    a bundle whose `ss -peaonmi` (as sos runs it) and `ss -ltnp` show the
    holder: the incident names the port, nginx, and who holds it."""
    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("ss (Debian package iproute2) is not installed")
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        error_log = _real_nginx_bind_failure(tmp_path, port)
        listening = subprocess.run([ss, "-peaonmi"], capture_output=True, text=True, check=True).stdout
    finally:
        holder.close()
    assert error_log.count(f"bind() to 127.0.0.1:{port} failed (98: Address already in use)") == 5
    assert "still could not bind()" in error_log
    bundle = tmp_path / "sosreport-web1-2026-11-24-abcdef"
    (bundle / "sos_commands" / "networking").mkdir(parents=True)
    (bundle / "sos_commands" / "host").mkdir(parents=True)
    (bundle / "var" / "log" / "nginx").mkdir(parents=True)
    (bundle / "sos_commands" / "networking" / "ss_-peaonmi").write_text(listening)
    (bundle / "sos_commands" / "host" / "hostname").write_text("web1\n")
    (bundle / "var" / "log" / "nginx" / "error.log").write_text(error_log)
    case = sarsleuth.load(bundle)
    top = case.incidents[0]
    assert (top.category, top.cause) == ("service-failure", "port-in-use")
    f = top.findings[0]
    assert f.title.startswith(f"port {port} already in use (127.0.0.1:{port}): nginx could not bind 5 x, gave up "
                              f"1 x ('still could not bind()'); held by python")
    assert f.refs["port"] == str(port) and "ss_-peaonmi" in f.refs["cite"]
    advice = top.recommendations[0]
    assert advice.startswith(f"python") and f"holds port {port}" in advice and "ss_-peaonmi" in advice


def test_boot_time_link_flaps_and_an_empty_sata_port_are_no_incident(tmp_path):
    """dmesg of a boot: the NIC's PHY goes down and up as the driver
    brings it up (e1000e), an empty SATA port reports its link down
    (libata-core.c sata_print_link_status): timeline, not incidents."""
    lines = [
        "[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) "
        "12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.55-1 (2023-09-29)",
        "[    1.912004] ata2: SATA link down (SStatus 0 SControl 300)",
        "[    1.912140] ata1: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
        "[    8.104221] e1000e 0000:00:1f.6 eno1: NIC Link is Down",
        "[   11.655571] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx",
        "[   11.656012] IPv6: ADDRCONF(NETDEV_CHANGE): eno1: link becomes ready",
    ]
    (tmp_path / "dmesg.txt").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path)
    assert case.incidents == []
    assert set(case.events["kind"]) >= {"nic-link-down", "nic-link-up", "kernel-boot"}


@pytest.mark.parametrize("down, up, kept", [
    # at boot, back within 3.6 s: the driver bringing the link up
    ("8.104221", "11.655571", False),
    # at boot but down for 40 s: a cable or a switch port, not the driver
    ("8.104221", "48.311002", True),
    # a day after boot, back within a second: a flap, whatever its length
    ("86408.104221", "86408.955571", True),
])
def test_a_link_down_is_noise_only_at_boot_and_back_within_seconds(tmp_path, down, up, kept):
    """The rule is the knowledge's (nic-link-down's ``noise`` in kb.toml):
    a boot, the same interface up again, within its seconds."""
    lines = [
        "[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) "
        "12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.55-1 (2023-09-29)",
        f"[{float(down):12.6f}] e1000e 0000:00:1f.6 eno1: NIC Link is Down",
        f"[{float(up):12.6f}] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx",
    ]
    (tmp_path / "dmesg.txt").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path)
    found = [f for f in case.findings if f.detector == "nic-link-down"]
    assert bool(found) is kept
    if kept:
        assert found[0].title == "1 link-down event(s) on eno1"


def test_a_host_s_own_restart_is_timeline_context(tmp_path):
    """A reboot as rsyslog writes it (traditional format): systemd stopping
    its units, the kernel booting again, its empty SATA port and its link
    brought up: no incident, the restart on the timeline."""
    lines = [
        "Nov 24 03:10:01 web1 systemd[1]: Stopping nginx.service - A high performance web server...",
        "Nov 24 03:10:01 web1 systemd[1]: nginx.service: Deactivated successfully.",
        "Nov 24 03:10:01 web1 systemd[1]: Stopped nginx.service - A high performance web server.",
        "Nov 24 03:10:02 web1 systemd[1]: Reached target reboot.target - System Reboot.",
        "Nov 24 03:10:02 web1 systemd-shutdown[1]: Syncing filesystems and block devices.",
        "Nov 24 03:10:40 web1 kernel: [    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org) "
        "(gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian "
        "6.1.55-1 (2023-09-29)",
        "Nov 24 03:10:40 web1 kernel: [    1.912004] ata2: SATA link down (SStatus 0 SControl 300)",
        "Nov 24 03:10:41 web1 kernel: [    8.104221] e1000e 0000:00:1f.6 eno1: NIC Link is Down",
        "Nov 24 03:10:44 web1 kernel: [   11.655571] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, "
        "Flow Control: Rx/Tx",
        "Nov 24 03:10:45 web1 systemd[1]: Started nginx.service - A high performance web server.",
    ]
    (tmp_path / "messages").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path, year=2026)
    assert case.incidents == []
    assert not [f for f in case.findings if f.detector != "host-restart"]
    assert {"kernel-boot", "nic-link-down", "nic-link-up"} <= set(case.events["kind"])


def test_an_xfs_shutdown_alone_is_a_filesystem_incident(tmp_path):
    """XFS of 6.x (fs/xfs/xfs_buf.c, xfs_fsops.c): a metadata write that
    failed, then the log's I/O error and the shutdown."""
    lines = [
        _kernel("04:10:00", 52000.1, 'XFS (dm-3): metadata I/O error in "xfs_buf_ioend+0x1c4/0x590 [xfs]" at daddr '
                                     '0x1a8e0 len 32 error 5', host="files1"),
        _kernel("04:10:00", 52000.2, "XFS (dm-3): log I/O error -5", host="files1"),
        _kernel("04:10:00", 52000.3, "XFS (dm-3): Log I/O Error (0x2) detected at xlog_ioend_work+0x71/0x80 [xfs] "
                                     "(fs/xfs/xfs_log.c:1378).  Shutting down filesystem.", host="files1"),
        _kernel("04:10:00", 52000.4, "XFS (dm-3): Please unmount the filesystem and rectify the problem(s)",
                host="files1"),
    ]
    case, top = _top(tmp_path, "kern.log", lines, year=2024)
    assert (top.category, top.cause) == ("filesystem-error", "filesystem-error")
    assert top.title == ("Filesystem errors on files1: XFS on dm-3: 2 error(s) (in xfs_buf_ioend), shut down "
                         "(Log I/O Error) at 04:10:00")
    assert any("xfs_repair" in r for r in top.recommendations)


def _btrfs_scrub_repairs(count: int, host: str = "nas1") -> list[str]:
    """A scrub of 3.x-6.x (fs/btrfs/scrub.c) repairing ``count`` blocks
    from the other mirror, each repair then the device's counter
    (fs/btrfs/volumes.c btrfs_dev_stat_inc_and_print), as dmesg prints
    them in a burst."""
    fixed = [_kernel("02:00:01", 1125.529 + i / 1e4, "BTRFS error (device dm-15): fixed up error at logical "
                     f"{124463056945152 + 4096 * i} on dev /dev/dm-10 physical {408018681856 + 4096 * i}", host=host)
             for i in range(count)]
    counters = [_kernel("02:00:01", 1125.53 + i / 1e4, "BTRFS error (device dm-15): bdev /dev/dm-10 errs: wr 0, rd 0, "
                        f"flush 0, corrupt {i + 1}, gen 0", host=host) for i in range(count)]
    return fixed + counters


def test_btrfs_errors_repaired_from_another_copy_are_counted_once_and_need_no_repair(tmp_path):
    """Five blocks scrub fixed up, each with its counter line: five errors,
    all corrected, the filesystem writable: no unmount and `btrfs check`."""
    case, top = _top(tmp_path, "kern.log", _btrfs_scrub_repairs(5), year=2024)
    f = top.findings[0]
    assert (top.category, f.detector, f.severity) == ("filesystem-error", "filesystem-error", "medium")
    assert f.title == "btrfs on dm-15: 5 error(s), all corrected from another copy on /dev/dm-10"
    assert (f.metrics["errors"], f.metrics["corrected"], f.metrics["needs_repair"]) == (5, 5, 0)
    assert "rewrote them from another copy" in f.explanation
    assert any("btrfs scrub start" in r for r in top.recommendations)
    assert not any("btrfs check" in r for r in top.recommendations)


def test_btrfs_errors_some_unrepaired_still_need_the_repair(tmp_path):
    """Near miss: scrub fixed two blocks and could not fix a third; the
    counters count three, so one error stands."""
    lines = _btrfs_scrub_repairs(2) + [
        _kernel("02:00:02", 1126.0, "BTRFS error (device dm-15): unable to fixup (regular) error at logical "
                                    "124463057000000 on dev /dev/dm-10", host="nas1"),
        _kernel("02:00:02", 1126.1, "BTRFS error (device dm-15): bdev /dev/dm-10 errs: wr 0, rd 0, flush 0, "
                                    "corrupt 3, gen 0", host="nas1"),
    ]
    case, top = _top(tmp_path, "kern.log", lines, year=2024)
    f = top.findings[0]
    assert f.severity == "high" and (f.metrics["errors"], f.metrics["corrected"], f.metrics["needs_repair"]) == (3, 2, 1)
    assert f.title.startswith("btrfs on dm-15: 3 error(s) ('unable to fixup (regular) error at logical 124463057000000…'), "
                              "2 corrected from another copy on /dev/dm-10")
    assert any("btrfs check" in r for r in top.recommendations)


def test_nvme_timeouts_and_a_controller_that_went_away(tmp_path):
    """drivers/nvme/host/pci.c of 5.x: I/O timeouts, the abort, the reset,
    then the controller gone from the bus and removed."""
    lines = [
        _kernel("11:00:00", 7000.0, "nvme nvme0: I/O 651 QID 3 timeout, aborting", host="app4"),
        _kernel("11:00:00", 7000.1, "nvme nvme0: Abort status: 0x0", host="app4"),
        _kernel("11:00:31", 7031.0, "nvme nvme0: I/O 651 QID 3 timeout, reset controller", host="app4"),
        _kernel("11:01:02", 7062.0, "nvme nvme0: controller is down; will reset: CSTS=0xffffffff, "
                                    "PCI_STATUS=0xffff", host="app4"),
        _kernel("11:01:03", 7063.0, "nvme nvme0: Removing after probe failure status: -19", host="app4"),
        _kernel("11:01:03", 7063.1, "critical target error, dev nvme0n1, sector 1953525000 op 0x1:(WRITE) flags "
                                    "0x8800 phys_seg 1 prio class 2", host="app4"),
    ]
    case, top = _top(tmp_path, "kern.log", lines, year=2024)
    assert (top.category, top.cause) == ("hardware-error", "disk-error")
    f = top.findings[0]
    assert "nvme0: 2 command timeout(s); 2 controller reset(s); controller down (CSTS=0xffffffff: gone from the " \
           "PCIe bus); removed by the driver" in f.title
    assert f.refs["controller"] == "nvme0" and f.severity == "high"
    assert any("nvme smart-log /dev/nvme0" in r for r in top.recommendations)


def test_pool_and_connection_limits_of_php_fpm_and_postgresql(tmp_path):
    """PHP-FPM to syslog (zlog's "[WARNING] " prefix) at pm.max_children,
    PostgreSQL refusing connections (log_destination = syslog)."""
    lines = [
        "Nov 24 15:00:01 app2 php-fpm8.2[811]: [WARNING] [pool www] seems busy (you may need to increase "
        "pm.start_servers, or pm.min/max_spare_servers), spawning 8 children, there are 0 idle, and 12 total children",
        "Nov 24 15:00:02 app2 php-fpm8.2[811]: [WARNING] [pool www] server reached pm.max_children setting (20), "
        "consider raising it",
    ] + [f"Nov 24 15:00:{3 + k:02d} app2 postgres[{5100 + k}]: [3-1] FATAL:  sorry, too many clients already"
         for k in range(12)]
    case, top = _top(tmp_path, "syslog", lines)
    assert top.category == "connection-limit"
    found = {f.detector: f for f in case.findings}
    assert found["fpm-pool-limit"].title == ("2 x PHP-FPM pool busy or at pm.max_children over 1 s: pool www reached "
                                             "pm.max_children = 20")
    assert found["db-connection-limit"].metrics == {"lines": 12, "too_many_clients": 12, "reserved_slots": 0,
                                                    "mysql_1040": 0, "burst_seconds": 11.0}
    assert any("PgBouncer" in r for r in top.recommendations) or any(
        "PgBouncer" in r for i in case.incidents for r in i.recommendations)


def test_a_unit_that_failed_once_is_said_not_alarmed(tmp_path):
    """systemd 252 at boot: one unit failed once and was not restarted."""
    lines = [_systemd("06:00:02", "systemd-modules-load.service: Main process exited, code=exited, "
                                  "status=1/FAILURE"),
             _systemd("06:00:02", "systemd-modules-load.service: Failed with result 'exit-code'."),
             _systemd("06:00:02", "Failed to start systemd-modules-load.service - Load Kernel Modules.")]
    (tmp_path / "syslog").write_text("\n".join(lines) + "\n")
    (f,) = sarsleuth.load(tmp_path).findings
    assert f.title == "systemd-modules-load.service failed 1 x (result 'exit-code', status=1/FAILURE)"
    assert f.severity == "medium" and f.metrics["failures"] == 1


def _stopped(status: str, result: str) -> list[str]:
    """systemd 249 stopping a unit whose program ends on SIGTERM without
    SuccessExitStatus=: the exit, the result, "Stopped"."""
    return [_systemd("18:26:56", "Stopping Ananicy - ANother Auto NICe daemon..."),
            _systemd("18:26:56", f"ananicy.service: Main process exited, code=exited, status={status}"),
            _systemd("18:26:56", f"ananicy.service: Failed with result '{result}'."),
            _systemd("18:26:56", "Stopped Ananicy - ANother Auto NICe daemon.")]


def test_a_unit_stopped_on_request_that_ended_on_sigterm_is_no_incident(tmp_path):
    (tmp_path / "syslog").write_text("\n".join(_stopped("143/n/a", "exit-code")) + "\n")
    case = sarsleuth.load(tmp_path)
    (f,) = case.findings
    assert f.title == ("ananicy.service stopped on request, counted failed by systemd: its process ended on the "
                       "stop's signal (result 'exit-code', status=143/n/a)")
    assert (f.severity, f.metrics["stopped_on_request"]) == ("low", 1)
    assert case.incidents == []


@pytest.mark.parametrize("status, result", [("1/FAILURE", "exit-code"), ("9/KILL", "signal")])
def test_a_unit_that_failed_while_stopping_is_still_a_failure(tmp_path, status, result):
    # near misses: an error exit, or killed after its stop timed out
    (tmp_path / "syslog").write_text("\n".join(_stopped(status, result)) + "\n")
    (f,) = sarsleuth.load(tmp_path).findings
    assert f.severity == "medium" and f.metrics["stopped_on_request"] == 0
    # and the same SIGTERM exit nobody asked for (a kill from outside) is one too
    lines = [line for line in _stopped("143/n/a", "exit-code") if "Stopping" not in line]
    (tmp_path / "syslog").write_text("\n".join(lines) + "\n")
    (f,) = sarsleuth.load(tmp_path).findings
    assert f.title == "ananicy.service failed 1 x (result 'exit-code', status=143/n/a)"


def _hung(clock: str, counter: int) -> list[str]:
    """systemd 255: a daemon that stopped answering its watchdog, aborted and restarted."""
    return [_systemd(clock, "snapd.service: Watchdog timeout (limit 5min)!"),
            _systemd(clock, "snapd.service: Killing process 1207 (snapd) with signal SIGABRT."),
            _systemd(clock, "snapd.service: Main process exited, code=dumped, status=6/ABRT"),
            _systemd(clock, "snapd.service: Failed with result 'watchdog'."),
            _systemd(clock, f"snapd.service: Scheduled restart job, restart counter is at {counter}.")]


def test_a_daemon_hanging_again_hours_apart_is_one_watchdog_incident(tmp_path):
    lines = [_systemd("03:10:02", "snapd.service: Scheduled restart job, restart counter is at 1.")]
    lines += _hung("11:37:38", 2) + _hung("20:50:08", 3)
    case, top = _top(tmp_path, "syslog", lines)
    assert len(case.incidents) == 1 and top.severity == "high"
    # the incident tells the recurrence as one; each finding says which of its failures it holds
    assert top.story["headline"].endswith("snapd.service failed 2 times from 11:37:38 to 20:50:08 (no watchdog "
                                          "keep-alive for 5min, result 'watchdog', status=6/ABRT).")
    assert [f.title for f in top.findings if f.metrics["failures"]][0] == (
        "snapd.service failed 1 x (no watchdog keep-alive for 5min, result 'watchdog', status=6/ABRT), 1 restart(s) "
        "(restart counter at 2); failure 1 of 2 from 11:37:38 to 20:50:08")
    assert any("systemd's watchdog killed it" in f.explanation for f in top.findings)
    # the restart whose failure the file does not hold is said, not alarmed
    (alone,) = [f for f in top.findings if not f.metrics["failures"]]
    assert (alone.title, alone.severity) == ("snapd.service restarted, 1 restart(s)", "medium")


def test_a_loop_device_s_io_error_is_no_failing_disk(tmp_path):
    """sos report probing an unbound loop device (`parted -s /dev/loop11`)
    makes the block layer log a failed write: no media failed."""
    log = tmp_path / "kern.log"
    log.write_text("Feb 11 19:23:37 k8s-4 kernel: [512330.401327] blk_update_request: I/O error, dev loop11, sector 0 "
                   "op 0x1:(WRITE) flags 0x800 phys_seg 0 prio class 0\n"
                   "Feb 11 19:23:37 k8s-4 kernel: [512330.401400] Buffer I/O error on dev loop11, logical block 0, "
                   "lost async page write\n")
    case = sarsleuth.load(log)
    assert not [f for f in case.findings if f.detector == "disk-error"] and case.incidents == []
    # near miss: the same error on a real disk is one
    disk = tmp_path / "kern2.log"
    disk.write_text(log.read_text().replace("loop11", "sdb"))
    (failing,) = [f for f in sarsleuth.load(disk).findings if f.detector == "disk-error"]
    assert failing.title.startswith("Disk sdb: 1 failed WRITE(s) at sector 0")


SHUTDOWN = """\
Feb 04 11:32:31 compute4 systemd-logind[812]: Power key pressed.
Feb 04 11:32:31 compute4 systemd-logind[812]: System is powering down.
Feb 04 11:32:37 compute4 systemd-networkd[2204]: ens3: Link DOWN
Feb 04 11:32:37 compute4 systemd-networkd[2204]: vethc76755b2: Link DOWN
Feb 04 11:32:40 compute4 systemd[1]: nova-compute.service: Main process exited, code=killed, status=9/KILL
Feb 04 11:32:40 compute4 systemd[1]: nova-compute.service: Failed with result 'signal'.
Feb 04 11:33:10 compute4 kernel: [ 4410.128811] reboot: Power down
"""


def test_what_a_host_s_own_shutdown_stops_is_context(tmp_path):
    log = tmp_path / "syslog"
    log.write_text(SHUTDOWN)
    case = sarsleuth.load(log)
    assert case.incidents == []
    assert {(f.detector, f.metrics.get("during_shutdown"), f.refs.get("shutdown")) for f in case.findings} == {
        ("nic-link-down", 1, f"{log}:2"), ("service-failure", 1, f"{log}:2")}
    (link,) = [f for f in case.findings if f.detector == "nic-link-down"]
    assert link.title == "1 link-down event(s) on ens3"          # the container's veth is no link of the host
    # near miss: the same failures with no shutdown are an incident
    plain = tmp_path / "syslog2"
    plain.write_text("".join(l + "\n" for l in SHUTDOWN.splitlines() if "powering down" not in l
                             and "Power down" not in l))
    assert [i.category for i in sarsleuth.load(plain).incidents][:1] in (["network-failure"], ["service-failure"])


def test_a_container_s_init_told_to_halt_is_its_shutdown(tmp_path):
    """An LXD container stopped by its host: its systemd receives
    SIGRTMIN+3 (halt), and what fails as it stops (finalrd cannot remount
    /run, multipathd's socket refused by the halt job) is context."""
    log = tmp_path / "syslog"
    log.write_text("\n".join([
        "Feb 04 11:32:33 rmq-5 systemd[1]: Received SIGRTMIN+3.",
        "Feb 04 11:32:33 rmq-5 systemd[1]: Stopped target Multi-User System.",
        "Feb 04 11:32:34 rmq-5 finalrd[44624]: mount: /run: cannot remount tmpfs read-write, is write-protected.",
        "Feb 04 11:32:34 rmq-5 systemd[1]: finalrd.service: Control process exited, code=exited, status=32/n/a",
        "Feb 04 11:32:34 rmq-5 systemd[1]: finalrd.service: Failed with result 'exit-code'.",
        "Feb 04 11:32:34 rmq-5 systemd[1]: multipathd.socket: Failed with result 'resources'."]) + "\n")
    case = sarsleuth.load(log, year=2022)
    assert case.incidents == [] and {f.metrics.get("during_shutdown") for f in case.findings} == {1}
    # near miss: a user's own systemd told to exit at logout is no shutdown of the host
    user = tmp_path / "user"
    user.mkdir()
    (user / "syslog").write_text(log.read_text().replace("systemd[1]: Received SIGRTMIN+3.",
                                                         "systemd[44129]: Received SIGRTMIN+24 from PID 44166 (kill)."))
    assert [i.category for i in sarsleuth.load(user / "syslog", year=2022).incidents] == ["service-failure"] * 2


def test_one_unit_failing_beside_another_is_not_its_effect(tmp_path):
    """A hardware daemon failing in a container at boot, then the
    application's own unit failing ten times on a refused database: two
    failures, neither the other's effect; the one that stayed down first."""
    lines = ["Feb 09 22:33:35 app-5 systemd[1]: openipmi.service: Control process exited, code=exited, status=1/FAILURE",
             "Feb 09 22:33:35 app-5 systemd[1]: openipmi.service: Failed with result 'exit-code'."]
    for i in range(10):
        t = f"22:34:{35 + 2 * i:02d}"
        lines += [f"Feb 09 {t} app-5 systemd[1]: vault.service: Main process exited, code=exited, status=1/FAILURE",
                  f"Feb 09 {t} app-5 systemd[1]: vault.service: Failed with result 'exit-code'.",
                  f"Feb 09 {t} app-5 systemd[1]: vault.service: Scheduled restart job, restart counter is at {i + 1}."]
    lines.append("Feb 09 22:34:57 app-5 systemd[1]: vault.service: Start request repeated too quickly.")
    log = tmp_path / "syslog"
    log.write_text("\n".join(lines) + "\n")
    first, second = sarsleuth.load(log).incidents
    assert first.severity == "critical" and "vault.service down after 10 failure(s)" in first.title
    assert [f.refs["unit"] for f in first.findings] == ["vault.service"]
    assert "openipmi.service failed 1 x" in second.title


def test_an_ata_protocol_violation_is_an_interface_error(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text(
        "Mar 12 04:10:07 db3 kernel: [88121.10] ata3.00: exception Emask 0x2 SAct 0x3 SErr 0x0 action 0x6 frozen\n"
        "Mar 12 04:10:07 db3 kernel: [88121.10] ata3.00: failed command: WRITE FPDMA QUEUED\n"
        "Mar 12 04:10:07 db3 kernel: [88121.10] ata3.00: cmd 61/08:00:40:15:90/00:00:32:00:00/40 tag 0 ncq dma 4096 "
        "out\n"
        "Mar 12 04:10:07 db3 kernel: [88121.10]          res 40/00:00:a0:0d:c0/00:00:42:00:00/40 Emask 0x2 "
        "(HSM violation)\n"
        "Mar 12 04:10:07 db3 kernel: [88121.10] ata3.00: status: { DRDY }\n")
    (disk,) = [f for f in sarsleuth.load(log).findings if f.detector == "disk-error"]
    assert "1 HSM violation(s)" in disk.title and disk.metrics["interface_errors"] == 1
    assert disk.severity == "medium" and disk.metrics["media_errors"] == 0
    # near miss: the drive refusing a command it does not support (ABRT alone) stays low
    refused = tmp_path / "kern2.log"
    refused.write_text(log.read_text().replace("Emask 0x2 (HSM violation)", "Emask 0x1 (device error)")
                       .replace("status: { DRDY }", "status: { DRDY ERR }\nMar 12 04:10:07 db3 kernel: [88121.10] "
                                                    "ata3.00: error: { ABRT }"))
    (low,) = [f for f in sarsleuth.load(refused).findings if f.detector == "disk-error"]
    assert low.severity == "low" and "HSM" not in low.title


def test_an_incident_of_one_finding_says_so_in_its_why(tmp_path):
    """Open vSwitch's over-MTU drops alone (no chain has them): the why
    names no "others" that do not exist."""
    lines = [f"Mar  3 10:00:0{i} cmp1 kernel: [ 810{i}.000001] tap0e778df8-ca: dropped over-mtu packet: 8950 > 1450"
             for i in range(1, 6)]
    (tmp_path / "kern.log").write_text("\n".join(lines) + "\n")
    (inc,) = sarsleuth.load(tmp_path / "kern.log").incidents
    assert inc.story["why"] == "It is the incident's only finding [kern.log:1]: nothing else in the case's files is tied to it."


def test_a_device_that_never_appeared_is_the_failure_of_the_units_that_need_it(tmp_path):
    """systemd (src/core/job.c) waited 90 s for an encrypted volume whose
    key server did not answer, then failed the mount and the service on
    it with result 'dependency': one finding, the device's, naming both."""
    lines = [_systemd("22:38:19", "Starting OpenStack Compute..."),
             _systemd("22:39:49", "Timed out waiting for device /dev/mapper/crypt-88244ad9-372d-427e-9d82-c411c73d900a."),
             _systemd("22:39:49", "Dependency failed for /var/lib/nova/instances."),
             _systemd("22:39:49", "Dependency failed for OpenStack Compute."),
             _systemd("22:39:49", "nova-compute.service: Job nova-compute.service/start failed with result 'dependency'."),
             _systemd("22:39:49", "var-lib-nova-instances.mount: Job var-lib-nova-instances.mount/start failed with "
                                  "result 'dependency'.")]
    case, top = _top(tmp_path, "messages", lines, year=2022)
    (f,) = [f for f in case.findings if f.detector == "service-failure"]
    assert f.title == ("/dev/mapper/crypt-88244ad9-372d-427e-9d82-c411c73d900a did not appear in time (systemd gave up "
                       "waiting for the device): nova-compute.service, var-lib-nova-instances.mount not started "
                       "(result 'dependency')")
    assert f.severity == "high" and f.metrics["units_blocked"] == 2 and len(f.evidence) == 5
    assert top.recommendations[0].startswith("Find why /dev/mapper/crypt-88244ad9")
    assert not any("wrote just before it exited" in r for r in top.recommendations)
    # near miss: a unit failing on a dependency with no device timing out is its own failure
    alone = tmp_path / "alone"
    alone.mkdir()
    case, top = _top(alone, "messages", [lines[0], lines[4]], year=2022)
    assert [f.title for f in case.findings] == ["nova-compute.service failed 1 x (result 'dependency')"]


def test_two_devices_timing_out_at_once_keep_each_its_own_blocked_units(tmp_path):
    """A disk whose two partitions never appeared, systemd saying both in
    one second: what sdc3's timeout stopped (its fsck, /mnt/ssd, local-fs)
    is sdc3's, told right after it; sdc2 blocked nothing."""
    said = ["dev-sdc3.device: Job dev-sdc3.device/start timed out.",
            "Timed out waiting for device dev-sdc3.device.",
            "Dependency failed for File System Check on /dev/sdc3.",
            "Dependency failed for /mnt/ssd.",
            "Dependency failed for Local File Systems.",
            "local-fs.target: Job local-fs.target/start failed with result 'dependency'.",
            "mnt-ssd.mount: Job mnt-ssd.mount/start failed with result 'dependency'.",
            "systemd-fsck@dev-sdc3.service: Job systemd-fsck@dev-sdc3.service/start failed with result 'dependency'.",
            "dev-sdc3.device: Job dev-sdc3.device/start failed with result 'timeout'.",
            "dev-sdc2.device: Job dev-sdc2.device/start timed out.",
            "Timed out waiting for device dev-sdc2.device.",
            "dev-sdc2.device: Job dev-sdc2.device/start failed with result 'timeout'."]
    case, _top_incident = _top(tmp_path, "messages", [_systemd("11:32:42", m) for m in said], year=2024)
    found = {f.refs["unit"]: f for f in case.findings if f.detector == "service-failure"}
    assert sorted(found) == ["dev-sdc2.device", "dev-sdc3.device"]
    assert [e.line for e in found["dev-sdc3.device"].evidence] == [2, 3, 4, 5, 6, 7]
    assert [e.line for e in found["dev-sdc2.device"].evidence] == [11]
    assert found["dev-sdc2.device"].metrics.get("units_blocked", 0) == 0


def test_a_configuration_test_that_fails_a_start_is_the_cause_of_the_failed_unit(tmp_path):
    """nginx's ExecStartPre (`nginx -t`) failing on an upstream host name
    that does not resolve, as a real journal has it: no reload happened,
    one test failed (its [emerg] and its "test failed" are one run), and
    the error is the cause of the unit's failure, which quotes it."""
    emerg = ('host not found in upstream "www.wikiwatershed-vs.org" in /etc/nginx/sites-enabled/mmw-app:99')
    lines = [_systemd("15:28:00", "Starting A high performance web server and a reverse proxy server..."),
             f"Nov 24 15:28:00 web1 nginx[30523]: nginx: [emerg] {emerg}",
             "Nov 24 15:28:00 web1 nginx[30523]: nginx: configuration file /etc/nginx/nginx.conf test failed",
             _systemd("15:28:00", "nginx.service: Control process exited, code=exited status=1"),
             _systemd("15:28:00", "Failed to start A high performance web server and a reverse proxy server."),
             _systemd("15:28:00", "nginx.service: Failed with result 'exit-code'.")]
    case, top = _top(tmp_path, "messages", lines, year=2024)
    roles = {f.detector: f for f in top.findings}
    test = roles["config-reload"]
    assert test.role == "cause" and roles["service-failure"].role == "effect"
    assert test.title == f"nginx configuration test failed, so it did not start, at 15:28:00: {emerg}"
    assert (test.metrics["failed"], test.metrics["reloads"], test.metrics["start_failed"]) == (1, 1, 1)
    assert roles["service-failure"].refs["last_words"] == f"nginx: [emerg] {emerg}"
    assert top.recommendations[0].startswith("The service did not start: its configuration test failed")
    # near miss: the same test failing on `systemctl reload` (no start failed) is a refused reload
    reload = tmp_path / "reload"
    reload.mkdir()
    (reload / "messages").write_text("\n".join([_systemd("15:28:00", "Reloading A high performance web server..."),
                                                 lines[1], lines[2]]) + "\n")
    (f,) = [f for f in sarsleuth.load(reload, year=2024).findings if f.detector == "config-reload"]
    assert f.title.endswith(f"configuration reload failed at 15:28:00: {emerg}") and f.metrics["start_failed"] == 0


def test_a_failed_service_says_what_its_program_said_before_it_died(tmp_path):
    """vault, as a real journal has it: its own error, then systemd's
    lines about its end; the finding quotes the error and cites its line."""
    said = ("Error initializing storage of type mysql: failed to check mysql schema exist: dial tcp "
            "127.0.0.1:3306: connect: connection refused")
    lines = [_systemd("22:34:34", "Started HashiCorp Vault."),
             "Nov 24 22:34:35 web1 vault[278]: ==> Vault server starting",
             f"Nov 24 22:34:35 web1 vault[278]: {said}",
             _systemd("22:34:35", "snap.vault.vault.b1a8f3f8.scope: Succeeded."),
             _systemd("22:34:35", "vault.service: Main process exited, code=exited, status=1/FAILURE"),
             _systemd("22:34:35", "vault.service: Failed with result 'exit-code'.")]
    case, top = _top(tmp_path, "messages", lines, year=2024)
    (f,) = [f for f in case.findings if f.detector == "service-failure"]
    assert f.title == f"vault.service failed 1 x (result 'exit-code', status=1/FAILURE); it said: '{said}'"
    assert f.refs["last_words"] == said and (f.evidence[0].line, f.evidence[0].text) == (3, lines[2])
    # near miss: a program whose last line says nothing went wrong is not quoted
    calm = tmp_path / "calm"
    calm.mkdir()
    case, top = _top(calm, "messages", lines[:2] + lines[3:], year=2024)
    (f,) = [f for f in case.findings if f.detector == "service-failure"]
    assert "it said" not in f.title and "last_words" not in f.refs


def test_a_filesystem_whose_log_could_not_be_mounted_is_not_there(tmp_path):
    """fs/xfs/xfs_log.c on 3.10 (RHEL 7): the log's read failed with EIO
    at mount, and the filesystem was not mounted; beside it another one
    mounts cleanly (near miss)."""
    lines = [_kernel("05:55:54", 14.101, "XFS (dm-6): Mounting V5 Filesystem", host="dn1"),
             _kernel("05:55:54", 14.102, "XFS (dm-7): Mounting V5 Filesystem", host="dn1"),
             _kernel("05:55:54", 14.201, 'XFS (dm-7): metadata I/O error: block 0x280000010 ("xlog_bread_noalign") '
                                         "error 5 numblks 8", host="dn1"),
             _kernel("05:55:54", 14.202, "XFS (dm-7): empty log check failed", host="dn1"),
             _kernel("05:55:54", 14.203, "XFS (dm-7): log mount/recovery failed: error -5", host="dn1"),
             _kernel("05:55:54", 14.204, "XFS (dm-7): log mount failed", host="dn1"),
             _kernel("05:55:55", 14.990, "XFS (dm-6): Ending clean mount", host="dn1")]
    case, top = _top(tmp_path, "messages", lines, year=2024)
    f = top.findings[0]
    assert (top.category, f.severity, f.metrics["not_mounted"], f.refs["devices"]) == (
        "filesystem-error", "critical", 1, ["dm-7"])
    assert f.title == "XFS on dm-7: 1 error(s) (in xlog_bread_noalign), not mounted ('log mount/recovery failed')"
    assert any("xfs_repair" in r for r in top.recommendations)


def test_a_thin_pool_out_of_space_is_the_cause_of_its_volume_s_filesystem_shutting_down(tmp_path):
    """drivers/md/dm-thin.c then XFS on a volume of the pool (docker's
    devicemapper storage): the pool filled, queued its writes, failed
    them, and the filesystem shut down: one disk-full incident, the pool
    its cause."""
    lines = [_kernel("03:10:00", 91000.1, "device-mapper: thin: 253:2: reached low water mark for data device: "
                                          "sending event.", host="dock1"),
             _kernel("03:12:00", 91120.4, "device-mapper: thin: 253:2: switching pool to out-of-data-space "
                                          "(queue IO) mode", host="dock1"),
             _kernel("03:13:00", 91180.4, "device-mapper: thin: 253:2: switching pool to out-of-data-space "
                                          "(error IO) mode", host="dock1"),
             _kernel("03:13:00", 91180.5, 'XFS (dm-5): metadata I/O error in "xfs_buf_ioend+0x1c4/0x590 [xfs]" '
                                          "at daddr 0x1a8e0 len 32 error 28", host="dock1"),
             _kernel("03:13:00", 91180.6, "XFS (dm-5): Log I/O Error (0x2) detected at xlog_ioend_work+0x71/0x80 "
                                          "[xfs] (fs/xfs/xfs_log.c:1378).  Shutting down filesystem.", host="dock1")]
    case, top = _top(tmp_path, "kern.log", lines, year=2024)
    assert (top.category, top.cause) == ("disk-full", "thin-pool-full") and len(case.incidents) == 1
    assert {f.detector: f.role for f in top.findings} == {"thin-pool-full": "cause", "filesystem-error": "effect"}
    assert top.recommendations[0].startswith("Give the thin pool room")


def test_an_ata_bus_error_is_the_link_not_the_media(tmp_path):
    """libata's Emask 0x10 (ATA bus error) with the port's SError
    PHYRdyChg: the SATA link dropped and was reset; medium, the cable
    advice, no media error (near miss of the HSM case above)."""
    lines = ["[  363.007111] ata7.00: exception Emask 0x10 SAct 0x80000008 SErr 0x4050000 action 0xe frozen",
             "[  363.015384] ata7.00: irq_stat 0x00000040, connection status changed",
             "[  363.021655] ata7: SError: { PHYRdyChg CommWake DevExch }",
             "[  363.026980] ata7.00: failed command: READ FPDMA QUEUED",
             "[  363.032139] ata7.00: cmd 60/58:18:08:8a:03/00:00:05:00:00/40 tag 3 ncq dma 45056 in",
             "                        res 50/00:58:58:89:03/00:00:05:00:00/40 Emask 0x10 (ATA bus error)",
             "[  363.047771] ata7.00: status: { DRDY }",
             "[  363.075955] ata7: hard resetting link",
             "[  363.787376] ata7: SATA link up 6.0 Gbps (SStatus 133 SControl 300)"]
    (tmp_path / "dmesg.txt").write_text("\n".join(lines) + "\n")
    case = sarsleuth.load(tmp_path / "dmesg.txt")
    (disk,) = [f for f in case.findings if f.detector == "disk-error"]
    assert disk.title.startswith("Disk ata7.00: READ FPDMA QUEUED failed 1 x; 1 ATA bus error(s) (the SATA link "
                                 "dropped and was reset")
    assert disk.severity == "medium" and disk.metrics["interface_errors"] == 1 and disk.metrics["media_errors"] == 0
    assert any("replace the SATA cable" in r for r in case.incidents[0].recommendations)


def test_each_failed_command_of_an_ata_report_is_counted_once(tmp_path):
    """Two libata reports pasted together (the second's exception line
    inside the first's lines): each failed READ with its media error is one
    media error, 2 in all, not one per report."""
    one = ["ata3.00: failed command: READ FPDMA QUEUED",
           "ata3.00: cmd 60/f0:08:75:79:2d/00:00:14:00:00/40 tag 1 ncq 122880 in",
           "         res 41/40:00:e0:79:2d/00:00:14:00:00/40 Emask 0x409 (media error) <F>",
           "ata3.00: status: { DRDY ERR }",
           "ata3.00: error: { UNC }",
           "ata3.00: configured for UDMA/133",
           "ata3: EH complete",
           "ata3.00: exception Emask 0x0 SAct 0xf SErr 0x0 action 0x0"]
    lines = [f"[  222.{i:06d}] {t}" if not t.startswith(" ") else t for i, t in enumerate(one + one[:5])]
    (tmp_path / "dmesg.txt").write_text("\n".join(lines) + "\n")
    (disk,) = [f for f in sarsleuth.load(tmp_path / "dmesg.txt").findings if f.detector == "disk-error"]
    assert disk.metrics["media_errors"] == 2 and disk.refs["sectors"] == [0x142D79E0]
    # the sector each failed at, from its result taskfile (res 41/40:00:e0:79:2d/00:00:14:00:00/40): one bad spot
    assert disk.title.startswith("Disk ata3.00: 2 media error(s) (UNC) at sector 338524640; READ FPDMA QUEUED "
                                 "failed 2 x (UNC)")
