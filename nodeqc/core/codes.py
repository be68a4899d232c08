"""Stable failure codes and what a technician should do about each.

A code never changes meaning once released: scripts and dashboards key on it. The text is the
first thing to try; the evidence in the result says why. Which checks may give each code is the
catalogue's (nodeqc.core.catalogue); tests/test_codes.py holds this table to it, both ways.
"""

from __future__ import annotations

import math
import re
from typing import Any

REMEDIATION: dict[str, str] = {
    # Inventory
    "NVML_UNAVAILABLE": "Install or load the NVIDIA driver so that `nvidia-smi` lists the GPUs, then re-run.",
    "GPU_COUNT": "Check that every GPU is seated and powered; compare `lspci -d 10de::0302` (the GPUs' 3D-controller class; `10de::0300` for display GPUs; plain `10de:` also lists NVSwitches) with `nvidia-smi -L` and read dmesg for RmInitAdapter errors.",
    "GPU_MISSING": "This GPU is on the PCI bus but the driver did not bring it up: read dmesg for RmInitAdapter/XID, reseat it and check its power cables; RMA if it stays missing.",
    "GPU_MODEL": "The GPU model does not match the profile: check the build order, or run with the right --profile.",
    "GPU_MEMORY_SIZE": "The GPU reports less memory than its model has: check for a wrong SKU or disabled memory; RMA if confirmed.",
    "GPU_MIXED": "GPUs of one node must match: replace a GPU of another model or memory size with the node's own, flash a GPU on another VBIOS to the one the others run (the server vendor's firmware package), set an odd power limit as the others have it; then re-run.",
    "DRIVER_VERSION": "Install the NVIDIA driver version the profile requires (or newer).",
    "CUDA_VERSION": "The driver supports too old a CUDA version: install a newer NVIDIA driver.",
    "ECC_DISABLED": "Enable ECC (`nvidia-smi -e 1`, then reboot): a datacenter GPU must run with ECC.",
    "ECC_PENDING_CHANGE": "An ECC mode change is pending: reboot the node so it takes effect, then re-run.",
    "FABRIC_NOT_REGISTERED": "The GPU is not registered with the NVLink fabric (`nvidia-smi -q`, Fabric: State/Status): check that the NVSwitch trays' fabric manager (NMX) runs and sees this tray, that all 18 NVLinks of the GPU are up (`nvidia-smi nvlink -s`), and the tray's cabling to the NVLink spine; reboot the tray once the fabric is up, and RMA the GPU if it still does not register.",
    "FABRIC_DEGRADED": "The NVLink fabric reports this GPU degraded (bandwidth, route recovery, access timeouts or a configuration error, as the message says): check the NVSwitch trays' and the fabric manager's logs for this GPU's links, reseat the tray's NVLink cartridges, re-run; RMA the GPU or tray if it stays degraded.",
    "FABRIC_HEALTH_UNREAD": "The GPU is registered with the NVLink fabric, but what it gave as its health mask is no mask, so its fabric health was not read: compare `nvidia-smi -q` (Fabric: Health) with the driver's release notes, update the driver and fabric manager to matching versions, and re-run.",
    "FABRIC_CLIQUE_MISMATCH": "The GPU is in another NVLink cluster or clique (partition) than its tray siblings: check the fabric manager's partition configuration for this rack, and that the tray is cabled to the right NVLink domain; re-run after the partition is fixed.",
    "PERSISTENCE_OFF": "Enable persistence mode (start nvidia-persistenced) so the driver stays loaded between jobs.",
    "HOST_CPU": "The node has fewer CPU cores than the profile requires: check the CPU SKU and that SMT/cores are enabled in the BIOS.",
    "HOST_MEMORY": "The node has less memory than the profile requires: reseat DIMMs and check the BIOS memory report for failed channels.",
    "IMEX_NOT_RUNNING": "The IMEX daemon is not running, so GPU memory cannot be shared across the NVLink domain: install nvidia-imex of the driver's version and start it (`systemctl enable --now nvidia-imex`); read /var/log/nvidia-imex.log if it exits.",
    "IMEX_NO_CHANNELS": "No IMEX channel device exists: create one (`mkdir -p /dev/nvidia-caps-imex-channels && mknod /dev/nvidia-caps-imex-channels/channel0 c $(grep nvidia-caps-imex-channels /proc/devices | cut -d' ' -f1) 0`, or load the driver with NVreg_CreateImexChannel0=1) and re-run.",
    "IMEX_SELF_MISSING": "The IMEX nodes config does not list this node, so the other nodes' IMEX daemons will not import its memory: add this node's address on the NVLink domain's network to /etc/nvidia-imex/nodes_config.cfg (the same file on every node of the domain), then restart nvidia-imex everywhere.",
    "IMEX_NODES_MISSING": "The IMEX nodes config (/etc/nvidia-imex/nodes_config.cfg) does not list every node of the NVLink domain: list each compute tray's address, one a line, the same file on every node, then restart nvidia-imex everywhere.",
    "FABRIC_MANAGER": "The NVIDIA fabric manager is not running, so GPUs on NVSwitch cannot reach each other: install nvidia-fabricmanager of the same version as the driver and start it (`systemctl enable --now nvidia-fabricmanager`); read `journalctl -u nvidia-fabricmanager` if it exits.",
    "PEERMEM_MISSING": "The GPUDirect RDMA module is not loaded, so NICs cannot read GPU memory directly: `modprobe nvidia-peermem` (it ships with the NVIDIA driver; older stacks use nv_peer_mem), and list it in /etc/modules-load.d so it loads at boot.",
    # NICs
    "NIC_COUNT": "The node has a different number of NICs than the profile expects: check that every NIC is seated and shows in `lspci`, that its driver loaded (dmesg), and the profile's [nic] match/drivers.",
    "NIC_LOST": "The NIC disappeared while nodeqc ran: read dmesg for driver or PCIe errors, reseat the NIC; RMA if it happens again.",
    "NIC_LINK_DOWN": "The link is down: check the cable and transceiver, the switch port (enabled, right speed), and `ip link` / `ibstat`; for InfiniBand, that a subnet manager runs on the fabric.",
    "NIC_SPEED": "The link runs below the speed the profile requires: check the cable and transceiver rating, the switch port's speed setting, and autonegotiation (`ethtool IFACE`).",
    "NIC_MTU": "The MTU is below what the profile requires: set it (`ip link set IFACE mtu N`, and in the network configuration so it persists), matching the switch.",
    "IB_PORT_DOWN": "An InfiniBand/RoCE port is not ACTIVE/LinkUp: check the cable, the switch port and the subnet manager (`ibstat`, `iblinkinfo`).",
    "IB_RATE": "The InfiniBand/RoCE port trained below the rate the profile requires: reseat or replace the cable/transceiver, check the switch port; `ibstat` shows the rate.",
    "NIC_PCIE_WIDTH": "The NIC's PCIe link trained narrower than it should: reseat the NIC or riser, check the slot (`lspci -vv` LnkSta vs LnkCap); RMA the riser or NIC if it persists.",
    "NIC_PCIE_GEN": "The NIC's PCIe link runs at a lower generation than it should: reseat it, check the BIOS PCIe speed setting and that the slot supports the NIC's generation.",
    "NIC_LINK_FLAP": "The link went down and up while nodeqc ran (carrier changes grew): replace the cable or transceiver, check the switch port's error log.",
    "IB_LINK_ERRORS": "InfiniBand port error counters grew while nodeqc ran (symbol errors, link downs, link recoveries): a marginal cable, transceiver or port; replace the cable first, then check the switch side.",
    "NIC_THROUGHPUT": "TCP throughput fell short of the profile's fraction of the link speed: check the PCIe link, the cable and switch port, the MTU on both ends, and CPU load; iperf3 before 3.16 runs all streams on one core and cannot fill links above about 40 Gb/s.",
    "RDMA_BANDWIDTH": "RDMA bandwidth fell short of the profile's fraction of the port rate: check the PCIe link and NUMA placement, the cable and switch port; with GPUDirect, that nvidia_peermem is loaded and the GPU shares a PCIe switch with the NIC.",
    "NIC_TRAFFIC": "The traffic tool could not measure this NIC: check that the peer runs the server on the port given (`iperf3 -s -p PORT`, `ib_write_bw -d DEVICE -p PORT`) and is reachable through this NIC (`ping -I IFACE PEER`), then the cable and switch port.",
    "NIC_NO_PEER": "No traffic peer was given, so throughput was not measured: pass --nic-peer HOST (or NIC=HOST), with `iperf3 -s` (and `ib_write_bw -d DEVICE` for RDMA) running on the peer.",
    "NIC_NO_ADDRESS": "The NIC has no IP address, so TCP traffic could not be sent through it: give it an address on the peer's network.",
    "IPERF3_MISSING": "Install iperf3 on this node and the peer (apt-get install iperf3, or dnf install iperf3).",
    # Tool output is untrusted input (issue 25): the node being qualified may be broken or compromised
    "TOOL_OUTPUT_UNREADABLE": "The tool's output was not in its format (a wrong type, NaN or Infinity, a number beyond any measurement, a table that does not parse), so nothing was measured: the evidence holds the end of its output and the message names the field. Run the command in the evidence by hand, check the tool's version and where its binary comes from (`command -v TOOL`, the package's checksums: debsums or rpm -V); a node whose tools print such output may be broken or compromised.",
    "FIGURE_IMPOSSIBLE": "The tool reported more than the link or device can carry (the message gives the figure and the limit): the measurement is suspect, not the node proven fast. Check the rate the driver reports (ethtool IFACE, ibstat), run the command in the evidence by hand, and check the tool's version and where its binary comes from (debsums or rpm -V); a node that reports impossible figures may be compromised.",
    "PERFTEST_MISSING": "Install perftest on this node and the peer (apt-get install perftest, or dnf install perftest) for ib_write_bw.",
    # Conformance with a golden baseline (nodeqc baseline create; --baseline FILE). The message names
    # the baseline's value and the command; these say where to look.
    "BASELINE_DRIVER": "Install the NVIDIA driver version the baseline records (the message names it), so every node runs the same driver.",
    "BASELINE_CUDA": "The driver supports another CUDA version than the baseline's: install the baseline's driver.",
    "BASELINE_KERNEL": "Boot the kernel the baseline records (the message names it); a different kernel changes drivers, IOMMU and PCIe behaviour.",
    "BASELINE_BIOS": "Flash the BIOS version the baseline records (the server vendor's update tool or the BMC), then re-check its settings against the golden node.",
    "BASELINE_BOARD": "This node is not the same build as the baseline's node: use a baseline made on a node of this build.",
    "BASELINE_IOMMU": "Set the IOMMU as the baseline has it (BIOS VT-d/AMD-Vi and the kernel command line: iommu=pt for passthrough), then reboot.",
    "BASELINE_GPU_MODEL": "A GPU of another model than the baseline's is fitted: replace it with the baseline's model.",
    "BASELINE_VBIOS": "Flash the VBIOS the baseline records onto this GPU (the server vendor's GPU firmware package, or nvflash), so all GPUs run the same firmware.",
    "BASELINE_GSP_FIRMWARE": "The GSP firmware comes with the NVIDIA driver: install the baseline's driver version.",
    "BASELINE_INFOROM": "Update the GPU firmware bundle (it carries the InfoROM) to the baseline's version; a different InfoROM can mean a different board revision.",
    "BASELINE_GPU_MODE": "Set the GPU mode as the baseline has it (the message gives the nvidia-smi command); MIG and ECC changes need a GPU reset or reboot.",
    "BASELINE_CLOCKS": "Set the application clocks as the baseline has them (nvidia-smi -ac), or reset them (nvidia-smi -rac) if the baseline runs at the defaults.",
    "BASELINE_POWER_LIMIT": "Set the power limit as the baseline has it (nvidia-smi -pl W) and check the BMC's power capping policy.",
    "BASELINE_NUMA": "The device is on another NUMA node than in the baseline: check it sits in the baseline's slot and that the BIOS NUMA settings (sub-NUMA clustering, NPS) match.",
    "BASELINE_PCIE_SWITCH": "The device sits on another PCIe switch than in the baseline (it shares it with other devices): move the card to the baseline's slot, check risers and PCIe cables; GPUDirect RDMA needs the GPU and its NIC under one switch.",
    "BASELINE_ACS": "Access Control Services differ from the baseline on a PCIe bridge: with ACS redirecting, GPU peer-to-peer and GPUDirect RDMA traffic detours through the CPU. Disable it in the BIOS (ACS / PCIe isolation option) or at boot with setpci on the bridge named (ECAP_ACS+0x6.w=0000); keep it on for virtual machines that pass devices through.",
    "BASELINE_HCA_FIRMWARE": "Flash the HCA firmware version the baseline records (mlxfwmanager --online -u, or flint with the vendor's image), then reset the NIC (mlxfwreset) or reboot.",
    "BASELINE_NIC_DRIVER": "Install and load the NIC driver (and version) the baseline records, e.g. the same MLNX_OFED/DOCA release.",
    "BASELINE_DEVICE_MISSING": "A GPU or NIC the baseline has is not on this node: check it is seated and that its driver loaded (lspci, dmesg).",
    "BASELINE_DEVICE_EXTRA": "This node has a GPU or NIC the baseline lacks: if it belongs to the build, record a new baseline on a known-good node.",
    "BASELINE_NOT_READ": "The node could not be read at all for its baseline (sysfs, DMI, the PCIe tree), so nothing was compared: run nodeqc as root on the node itself; the warning at the start of the run names what failed.",
    "BASELINE_UNREADABLE": "A value the baseline records could not be read on this node: run nodeqc as root (PCIe config space, DMI) and check the NVIDIA and NIC drivers are loaded.",
    # Conformance where this run has no backend for part of the node (a replay of an NVML capture has
    # no platform and no NICs): what the baseline records there was not looked at, so not compared.
    "BASELINE_PCIE_SLOT": "The device has another PCI bus id than in the baseline: it sits in another slot, behind another riser or root port, or the BIOS enumerates PCIe differently (a changed setting or BIOS version). Move the card to the baseline's slot and check the risers and the BIOS's PCIe settings; if the build changed on purpose, record a new baseline on a known-good node.",
    "BASELINE_NOTHING_COMPARED": "The baseline records no field this run compares (the profile's baseline_ignore leaves out every field it has), so conformance was not shown: record a fuller baseline on a known-good node (nodeqc baseline create), or narrow baseline_ignore.",
    "BASELINE_NOT_HERE": "Part of the baseline (the PCIe tree and its bridges' ACS, NUMA nodes, switch peers, DMI/BIOS, the IOMMU, the NICs) is read from the machine nodeqc runs on, and this run has no backend for it (a replay of a capture carries only the captured GPUs' NVML answers): it was not compared, not found different. Run nodeqc baseline check, or the run with --baseline, on the node itself to compare it.",
    # NVIDIA's DCGM diagnostic (dcgmi diag): the evidence holds each test's DCGM_FR code, severity,
    # DCGM's message and the next step for it; these say what the family of failures needs.
    "DCGM_MISSING": "DCGM is not installed, so NVIDIA's own diagnostic is not in the report (vendors ask for its evidence before they accept a GPU back): install the datacenter-gpu-manager package from NVIDIA's CUDA repository (DCGM 4: datacenter-gpu-manager-4-cuda12 or -cuda13), start its host engine (`systemctl enable --now nvidia-dcgm`, or run nv-hostengine) and re-run.",
    "DCGM_OFF": "The DCGM diagnostic was switched off for this run (--dcgm off, or the profile's [dcgm] level = 0): run with --dcgm 1 to 4 where a vendor needs DCGM evidence.",
    "DCGM_NOT_HERE": "This run has no live node to run dcgmi on (a simulated node, or a replay of a capture): run nodeqc on the node itself for the DCGM diagnostic; a simulated run runs the dcgmi on PATH only when --dcgm LEVEL asks.",
    "DCGM_HANG": "dcgmi diag did not finish in its time and was killed: DCGM users see this on a GPU that no longer answers. Read dmesg for XIDs, check `nvidia-smi` answers for every GPU, reset the GPUs or reboot, then re-run; a GPU that hangs DCGM again needs inspection. A longer diagnostic level may need a longer [dcgm] timeout_s in the profile.",
    "DCGM_RUNTIME_ERROR": "DCGM could not run its diagnostic (the message gives DCGM's words): check the host engine runs (`systemctl status nvidia-dcgm`; `dcgmi discovery -l` lists the GPUs), that no other process holds the GPUs, that DCGM's version supports this driver, and run `dcgmi diag -r 1` by hand.",
    "DCGM_TEST_SKIPPED": "DCGM skipped these tests on this GPU (its evidence says why where DCGM said): a skip is no verdict; check the GPU is supported by this DCGM version and that its test prerequisites are met, or run a higher --dcgm level.",
    "DCGM_WARN": "DCGM warns about this GPU (the evidence gives DCGM's code, message and next step): the GPU may work but should be watched; fix what DCGM names and re-run `dcgmi diag`.",
    "DCGM_FAIL": "DCGM failed this GPU (the evidence gives each test's DCGM_FR code, severity, DCGM's message and the next step): follow the next step, re-run `dcgmi diag -r 3` after the repair, and give this report, which carries DCGM's JSON, to the vendor for an RMA.",
    "DCGM_XID": "DCGM saw an XID or a GPU fault needing recovery (the evidence names it): read dmesg around it, reset the GPU (`nvidia-smi -r -i N`) or reboot as DCGM's next step says, and re-run; an XID that comes back after a reset is a hardware fault: RMA the GPU with this report.",
    "DCGM_MEMORY": "DCGM found a GPU memory fault (ECC errors, pages or rows waiting to be retired or remapped, faulty memory): reset the GPU (`nvidia-smi -r -i N`) or reboot so pending retirements and remaps take effect, then re-run; a GPU with uncorrectable errors after the reset, or out of spare rows, goes back to the vendor with this report.",
    "DCGM_PCIE": "DCGM found the GPU's PCIe link at fault (replays, a link below its generation or width, corrupt copies over PCIe): reseat the GPU and its riser, check the slot's BIOS PCIe setting, and re-run; replace the riser or the GPU if it stays.",
    "DCGM_NVLINK": "DCGM found an NVLink or NVSwitch fault (a link down or erring, SXIDs, fabric training): check that nvidia-fabricmanager runs and matches the driver, reset the GPUs (or reboot) and re-run; a link that stays down needs the baseboard or GPU inspected.",
    "DCGM_THERMAL": "DCGM saw the GPU held back by heat: check the fans, airflow and blanking panels, the inlet temperature and the GPU's heatsink contact, then re-run.",
    "DCGM_POWER": "DCGM saw the GPU short of power (it could not reach its target power, was held back by its power limit, or its power could not be read): check the power limit (`nvidia-smi -q -d POWER`), the PSUs and the GPU's power cables, then re-run.",
    "DCGM_PERFORMANCE": "DCGM measured this GPU below its own thresholds (bandwidth, latency, GFLOPS or stress level): check clocks, throttling and the PCIe/NVLink topology, compare with nodeqc's own stress results in this report, and re-run.",
    "DCGM_SOFTWARE": "DCGM's software checks failed (driver, libraries, permissions, persistence mode, processes on the GPU, environment): fix what DCGM's message names (it is in the evidence) and re-run; this is the node's set-up, not its hardware.",
    # Host health over the run: memory errors, PCIe errors, the kernel log
    "EDAC_CE": "Corrected memory errors grew during the run: note the DIMM named, watch it; reseat or replace it if the count keeps rising (a DIMM with corrected errors is likelier to fail uncorrectably).",
    "EDAC_UE": "Uncorrected memory errors during the run: replace the DIMM named (the BMC's event log confirms the slot), then re-run.",
    "EDAC_UNREADABLE": "A memory controller's error counts in sysfs (/sys/devices/system/edac/mc/mcN/ce_count, ue_count) were not a number nodeqc could read, or were gone at the end of the run, so its memory errors were not judged: read them by hand and check the BMC's event log for memory errors; counts the kernel does not give as numbers are a kernel or EDAC driver fault (update the kernel), then re-run.",
    "EDAC_MISSING": "No EDAC memory controllers are registered, so memory errors were not watched: load the platform's EDAC driver (i10nm_edac / skx_edac on Intel, amd64_edac on AMD) or read the BMC's event log instead.",
    "AER_CORRECTABLE": "Correctable PCIe errors grew on the device or bridge named: reseat the card or riser, check the slot and cables; a rising count means a marginal link.",
    "AER_UNCORRECTABLE": "Uncorrectable PCIe errors on the device or bridge named: reseat the card and riser, check the slot; replace the riser or card if they recur.",
    "AER_MISSING": "The kernel shows no AER counters (aer_dev_correctable): PCIe errors were not watched. Enable AER (pci=noaer not set; firmware-first platforms report them to the BMC instead).",
    "KERNEL_XID": "The NVIDIA driver logged an Xid for this GPU: do what NVIDIA's Xid catalogue says of it (the message gives its meaning and action, as health.xid's advice does for the same Xid from NVML): stop the GPU's work, reset it (`nvidia-smi -r -i N`; a GPU on NVLink/NVSwitch may need the node rebooted) and re-run; RMA it if the same Xid returns after the reset.",
    "KERNEL_MCE": "The CPU reported a machine check during the run: decode it (rasdaemon's ras-mc-ctl, or mcelog) for the bank and DIMM or CPU; replace the part it names.",
    "KERNEL_AER": "The kernel logged a PCIe AER error for the device named: reseat the card or riser, check the slot; uncorrected errors recur on failing hardware.",
    "KERNEL_NVME_RESET": "An NVMe drive timed out or was reset during the run: check its SMART log (nvme smart-log), firmware and seating; replace it if it recurs.",
    "KERNEL_LOG_UNREADABLE": "The kernel log could not be read: run nodeqc as root (or with CAP_SYSLOG) so /dev/kmsg can be read, or allow journalctl -k.",
    # Firmware-first hardware errors (APEI GHES records in the kernel log), fatal NVSwitch errors
    # (SXid) and a kernel log that lost records before they were read.
    "KERNEL_HW_ERROR": "The platform firmware reported a hardware error during the run (APEI GHES): the lines after 'event severity' name the section (memory, PCIe, processor) and the DIMM or device; read the BMC's event log (ipmitool sel elist) for the same event and replace the part it names; a corrected one alone: watch it and re-run.",
    "KERNEL_SXID": "An NVSwitch reported a fatal error (SXid) during the run: look the code up in NVIDIA's NVSwitch SXid list (Fabric Manager user guide), reset the GPUs and NVSwitches (reboot the node) and re-run; if it recurs on the same switch or link, the baseboard needs service.",
    "KERNEL_LOG_LOST": "Part of the run's kernel messages went unread (the ring buffer wrapped before nodeqc read it, or reading the log failed part way: the finding says which): read them in the journal (journalctl -k) for the run's window; if the buffer wrapped, find what flooded the log and raise it (boot parameter log_buf_len=16M) before re-running.",
    # Host stress (full runs): CPU known answers, memory bandwidth, NVMe (fio), optical modules
    "HOST_CPU_WRONG": "A CPU core computed wrong answers: the core is faulty. Note the CPU number, check the BMC and mcelog/rasdaemon for machine checks, and replace the CPU; until then the node must not run jobs.",
    "HOST_CPU_STRESS_DIED": "The CPU stress work died on the named cores before its answers could be checked, so they were not judged: read dmesg for the OOM killer and for machine checks (mcelog/rasdaemon, the BMC's event log). A machine check naming the core means a faulty CPU: replace it; otherwise free the host's memory and re-run.",
    "HOST_MEM_BANDWIDTH": "Host memory bandwidth is below the profile's floor: check that every DIMM slot the build needs is populated and detected (dmidecode -t memory, the BIOS memory report), the memory speed, and NUMA settings.",
    "FIO_MISSING": "Install fio (apt-get install fio, or dnf install fio) to test the local NVMe drives.",
    "NVME_FIO": "fio could not test the drive: read its error; check the device path in the profile, that nothing holds it, and the drive's health (nvme smart-log).",
    "NVME_SLOW": "The NVMe drive reads slower than the profile's floor: check its PCIe link (lspci -vv LnkSta), thermal throttling (nvme smart-log), firmware, and that no other I/O ran.",
    "ETHTOOL_MISSING": "Install ethtool (apt-get install ethtool, or dnf install ethtool) to read the NICs' optical modules.",
    "OPTICS_ALARM": "An optical module reading is outside its own alarm range: clean the connector and fibre, reseat or replace the transceiver; a high temperature points at airflow over the NIC.",
    "OPTICS_WARNING": "An optical module reading is outside its own warning range: clean the fibre ends and check the transceiver and its airflow before it reaches the alarm range.",
    # Optics read with mlxlink (NVIDIA MFT): the link's error rate after FEC, and output it could not read
    "LINK_BER_HIGH": "The link loses bits even after forward error correction: reseat the cable or transceiver at both ends, clean the fibre, then clear the counters (mlxlink -d <dev> --pc) and re-test; replace the cable or transceiver if the rate stays high, and check the switch port's side with its own counters.",
    "OPTICS_UNREADABLE": "mlxlink's output could not be read for this port: run `mlxlink -d <PCI address> -m -c` by hand as root; update MFT (or mstflint) to match the NIC firmware, or remove it so nodeqc reads the module with ethtool -m.",
    "MODULE_UNREADABLE": "`ethtool -m` hung or could not run for this port, so its module was not judged: run `ethtool -m IFACE` by hand as root; a hang points at the NIC driver or the module's management bus: reseat the module, update the NIC driver and firmware.",
    # Fleet statistics
    "FLEET_OUTLIER": "This GPU or node clears the profile's floor but trails its fleet (same SKU, other nodes' newest reports): treat it as the first suspect for slow jobs; check its cooling, power and PCIe/NVLink, compare its telemetry with a median node's, and re-test.",
    # Without a peer: NCCL through the node's own NICs (issue 15)
    "NCCL_NET_SLOW": "The all-reduce with NVLink and shared memory off (every byte through the NICs) fell short: a NIC, its PCIe link or its GPUDirect path (nvidia_peermem, ACS/IOMMU settings on the PCIe switches) is slow; run the RDMA loopback (nic.rdma) to find which NIC, and check `nvidia-smi topo -m` for the GPU-NIC affinity.",
    # Fabric: many nodes qualified together by pair tests (nodeqc fabric)
    "FABRIC_NODE": "This node failed its pair tests with several peers that passed with others: the node itself (its NICs' PCIe links, NUMA placement, firmware, CPU load) is at fault. Run `nodeqc --headless` on it for the NIC and host checks, fix, then re-run the fabric test; it stays drained until it passes.",
    "FABRIC_NODE_RAIL": "One rail of this node failed with peers that passed on that rail with other nodes: its NIC, cable or transceiver on that rail. Check `ibstat` and the port's error counters, reseat or replace the cable/transceiver, then re-run.",
    "FABRIC_RAIL": "One rail failed across the fabric while the same pairs passed on other rails (or, with one rail, more than bad nodes explain): the rail's switches or a fabric-wide setting (subnet manager, routing, PFC/ECN for RoCE). Check the rail's leaf switches and the subnet manager's logs.",
    "FABRIC_GROUP_NODE": "This node failed NCCL's collectives across a group of nodes, then again with a known-good partner (a node whose own group passed): the node itself, where a job's collective meets it: its GPUs, NVLink or NVSwitch, the PCIe path between its GPUs and NICs, its NICs under every rail at once, or NCCL's settings on it. Run `nodeqc --headless` on it (the in-node NCCL, P2P and PCIe checks), fix, then re-run the fabric test with the same --group-size; it stays drained until it passes.",
    "FABRIC_GROUP_TOGETHER": "These nodes failed NCCL's collectives together while each part passed on its own (or with a known-good partner): the paths between them, or the load of the whole group on their switches (a leaf switch's ports or uplinks, adaptive routing, a fabric setting such as SHARP or congestion control). Check the switch ports and counters on their routes (ibtracert, iblinkinfo, the switches' error counters), then re-run the fabric test with the same --group-size.",
    "FABRIC_GROUP_WIDE": "Most groups failed the same collectives: the fabric as a whole, or a floor above what it can give (check the profile's [nic] floors against the fabric's design: NICs per node, their rate, SHARP), not any node. No group was split. Check the fabric's settings (NCCL's environment on the nodes, the subnet manager, adaptive routing, congestion control), then re-run.",
    "FABRIC_GROUP_NVLINK": "Every group test within this multi-node NVLink domain failed while groups elsewhere passed: the domain's NVLink fabric, not one tray (NCCL there fell back to the NICs, or failed). Check the rack's NVSwitch trays and their fabric manager, each tray's NVLink fabric state (`nvidia-smi -q`: Fabric State Completed, Status Success, one Cluster UUID and Clique ID; `nodeqc --headless` checks it), and IMEX (nvidia-imex running with its channels, every tray of the domain in nodes_config.cfg); fix, then re-run the fabric test with the same --group-size. Its trays stay drained until it passes.",
    "FABRIC_GROUP_NOT_JUDGED": "This node's group tests could not settle it: the group failed and no known-good partner was free to confirm it against, or its test with one could not run, or the run stopped. Nothing says it is good. Re-run the fabric test (with more nodes, or a smaller --group-size, so known-good partners exist); read the group rows of the report for the errors.",
    "FABRIC_LINK": "Two nodes that pass with everyone else failed together: the path between them (a spine or leaf port on their route, a routing table entry). Check the switch ports on their route (ibtracert/iblinkinfo) and re-run the pair.",
    "FABRIC_INCONCLUSIVE": "The pair tests could not tell this node apart from its peers (it met too few good peers, or only failed against one, or was tested only on a rail that failed across the fabric): mend a failed rail first (FABRIC_RAIL), then re-run, with more rounds (--rounds) or more nodes where it met too few good peers.",
    "FABRIC_NOT_MEASURED": "A pair test could not be measured on these nodes (no active RDMA port, no floor for the link, ...): read the reason; it is no evidence either way.",
    "FABRIC_WORKER_LIED": "This node's worker printed results it could not have measured (a result for another node, a second result, a figure its peer measures, a rail it does not have): treat the node as broken or compromised. Take it out of service, check what runs as nodeqc on it (the package, its PATH, the container image) and its integrity, reinstall, then re-run the fabric test; the refused lines are in the evidence.",
    "FABRIC_LINE_REFUSED": "A worker's result line was refused (malformed: a wrong type, a non-finite or negative figure, a figure beyond its port's rate, a name with control characters, nesting past reason), so this pair was not tested: the node named in the message printed it. Check nodeqc's version and the tools (iperf3, perftest, the NIC driver's sysfs rates) on that node, then re-run.",
    "FABRIC_UNTESTED": "No pair test crossed this part of the fabric, so a fault there would go unseen. For node pairs (not measured): the schedule tests a sample of pairs, each node against several peers; a small cluster can test every pair with --rounds N-1, a large one can re-run with another --seed to cover other pairs. For a rail or a switch uplink (could not be judged): read why its pairs gave no result (the pair errors above) and re-run; with --topology, check that the topology lists these nodes.",
    "FABRIC_UPLINK": "The tests that cross this switch's uplink failed while the nodes under it passed among themselves: the uplink (its cables, transceivers, the ports at either end, or the switch above), not the nodes. Check the switch's uplink ports and their error counters (iblinkinfo, ibqueryerrors; on Ethernet the switch's interface counters), reseat or replace the failing cables, then re-run the fabric test with --topology.",
    "NVME_SCRATCH_EXISTS": "The profile's [host] fio_scratch names a file that exists, and nodeqc writes and removes only a file it makes: the drive was not measured. Name a path that does not exist (on the drive to test); a file a killed run left there is nodeqc's scratch file and may be removed. Then re-run.",
    "NOT_READ": "The GPU gave no valid reading of this during the whole run (NVML answered NotSupported, or values no part can give: a driver's or firmware's garbage), so it was not watched under load and the run cannot call it good. Check the driver and the GPU's own report (`nvidia-smi -q`), update or reinstall the driver, reset or reseat the GPU, then re-run; a GPU that cannot report its temperature or its link is not qualified.",
    "FABRIC_LEAF": "Every pair test of every node under this leaf switch failed, among themselves and across the leaf, while the rest of the fabric passed: the leaf switch itself (its power, a reboot or hang, its configuration or the subnet manager's view of it), or every node under it at once, which no pair test can tell apart. Check the switch first (its status and logs, ibswitches/iblinkinfo or its management interface, its power feeds); once it is up, re-run the fabric test with --topology: its nodes stay drained until then, each judged on its own.",
    "FABRIC_STRAGGLER": "This node's pair tests moved their bytes at full rate and their median latency was normal, but their 99th percentile latency was high with most peers (which were normal with others): a straggler, slow only at the tail, which every collective it joins waits for. Look for what stalls it now and then: interrupts and other work on the NIC's NUMA node (irqbalance, a noisy process), CPU frequency and C-states, PCIe ASPM on the NIC's link, NIC firmware, a flapping or retraining link (`nodeqc --headless` for the NIC and host checks); fix, then re-run the fabric test with `--tests rdma,lat`.",
    "FABRIC_NODE_LATENCY": "This node's pair tests had a high median latency as well as a high tail with most peers (which were normal with others): its RDMA path is slow throughout. Check the NIC's PCIe link (width, speed, placement), its firmware and settings, and the host's CPU and NUMA setup (`nodeqc --headless`); fix, then re-run the fabric test.",
    "FABRIC_TAIL": "The 99th percentile latency was above its floor on pairs no one node explains: on one pair, the path between the two nodes (a switch port on their route) or either node; across most of the fabric, the fabric itself (switch buffering, congestion control: PFC/ECN on RoCE, adaptive routing, the subnet manager's settings). Check the switches' counters on the route (ibqueryerrors, the switches' discard and pause counters), then re-run the fabric test.",
    "FABRIC_PAIR_ERROR": "This pair could not be tested (the launcher or the worker failed): read the error; check that nodeqc, iperf3 and perftest are installed on both nodes and that the job's allocation holds them.",
    # Health during the run
    "TEMP_HIGH": "The GPU ran too hot: check fans, airflow, blanking panels, heatsink contact and the inlet temperature, then re-run.",
    "TEMP_SLOWDOWN": "The GPU reached its own slowdown temperature: cooling is inadequate (fans, airflow, heatsink); fix it before use.",
    "MEM_TEMP_HIGH": "GPU memory (HBM) ran too hot: check airflow and heatsink contact over the memory stacks.",
    "THROTTLE_THERMAL": "Clocks were cut for temperature: check cooling (fans, airflow, heatsink, inlet temperature).",
    "THROTTLE_HW_SLOWDOWN": "Hardware slowdown was asserted: check the GPU's power cables and the PSUs; a failing PSU or an over-current event triggers it.",
    "THROTTLE_POWER_BRAKE": "The chassis asserted power brake: check the PSUs and the node's power budget (BMC event log).",
    "PCIE_WIDTH": "The PCIe link trained narrower than its maximum under load: reseat the GPU or riser, check the slot and cable; RMA the riser if it persists.",
    "PCIE_GEN": "The PCIe link trained at a lower generation than its maximum under load: reseat the GPU or riser, check the BIOS PCIe speed setting and retimers.",
    "PCIE_REPLAY": "The PCIe link replayed packets (signal errors): reseat the GPU or riser and check the slot; a rising count means a marginal link.",
    "NO_LOAD": "The GPU was never seen under load, so what only load shows (its PCIe link, its temperature, why its clocks were cut) could not be judged: make sure the stress checks ran on it (CuPy installed, no other process on the GPU: stress.gpu_free); if they did, sample more often (--sample-hz).",
    "ECC_DBE": "Uncorrectable (double-bit) memory errors: reset the GPU and re-run; if they recur, RMA the GPU.",
    "ECC_SBE": "Correctable memory errors grew during the run: watch this GPU; re-run, and RMA if the count keeps rising.",
    "SRAM_ECC_UNCORRECTABLE": "Uncorrectable ECC errors in the GPU's on-chip memory (caches, register files), which has no spare rows: RMA the GPU (Azure's health checks fail any).",
    "SRAM_ECC_CORRECTED": "Corrected ECC errors in the GPU's on-chip memory are many or growing: re-run to see whether they keep growing; RMA the GPU if they pass the profile's limit again.",
    "POWER_LOAD_NOT_REACHED": "The power test's load stopped before its planned time, or telemetry took too few power readings under it, so the power it drew was not shown: check that NVML answers promptly (`nvidia-smi -q -d POWER,UTILIZATION`), persistence mode is on and nothing else uses the GPU, then re-run; if the load stops short again, reset the GPU (`nvidia-smi -r -i N`) and report it with the journal file.",
    "POWER_LIMIT_UNREADABLE": "The driver reported an enforced power limit that is no limit (0 W or less), so power under load could not be judged: check `nvidia-smi -q -d POWER` (Enforced Power Limit) and the driver's log (`dmesg`), reset the GPU or reboot, reinstall the driver if it persists, then re-run.",
    "POWER_NOT_READ": "Telemetry took no reading of the GPU under load while the power test held it: NVML answered too slowly or not at all (check that `nvidia-smi -q -d POWER,UTILIZATION` answers promptly, persistence mode is on and the driver is healthy), then re-run.",
    "POWER_TARGET_LOW": "Held at full load, the GPU did not reach its share of the power limit: check the enforced limit (`nvidia-smi -q -d POWER`; someone may have lowered it), the GPU's power cables and the PSUs; if power and clocks are normal, the GPU draws too little for its work (compare with a sibling), RMA.",
    "POWER_PULSE_THROTTLE": "Clocks were cut (HW slowdown or power brake) while the load swung between full and idle: the node's power delivery cannot follow fast transients. Check the PSUs (all present, input power, redundancy), the GPU power cables and the BMC event log; the faster the failing period, the more likely a PSU or a power cable.",
    "PULSE_NOT_FOLLOWED": "The GPU's bursts overran the pulse test's periods where its sibling GPUs, under the same plan at the same time, computed within plan: its clocks do not keep up while the load swings. Check for locked clocks, a power limit lowered below its siblings' and another process on it (`nvidia-smi -q -d CLOCK,PERFORMANCE,POWER`, `nvidia-smi --query-compute-apps=pid,name --format=csv`), reseat its power cables and re-run; if it recurs, swap it with a sibling's slot: a fault that follows the GPU is the GPU's (RMA with the pulse evidence), one that stays with the slot is the baseboard's power delivery.",
    "PULSE_LOAD_NOT_REACHED": "The pulse test did not produce the swings it is for (the evidence gives each period's duty and power readings), so its verdict would say nothing of the power delivery: check that no other process shares the GPU and that clocks are not locked (`nvidia-smi -q -d CLOCK,PERFORMANCE`), then re-run; if the GPU still cannot follow the swings with the node otherwise healthy, compare with a sibling GPU and escalate to the vendor.",
    "PULSE_NOT_OBSERVED": "The pulse load ran but nothing watched it (no NVML telemetry sample and no driver throttle counter in its window): NVML answered too slowly or not at all: check that `nvidia-smi -q -d PERFORMANCE` answers promptly, persistence mode is on and the driver is healthy, that --sample-hz is not set too low, then re-run.",
    # The node's power supplies during the power tests, as its BMC reports them (ipmitool)
    "PSU_FAILURE": "A power supply reported a failure or predictive failure during the power test: read the BMC event log (`ipmitool sel elist`), reseat the PSU, and replace it if the state returns; re-run the pulse test after.",
    "PSU_INPUT_LOST": "A power supply lost its input (or it went out of range) during the power test: check its power cord and the PDU outlet and circuit (breaker, phase load); a feed that sags under the GPUs' swings needs the data-centre's electrician, a PSU whose input reads low on a good feed needs replacing.",
    "PSU_REDUNDANCY_LOST": "The power supplies lost (or degraded) their redundancy during the power test: one PSU dropped out or cannot carry its share; find which (`ipmitool sdr type \"Power Supply\"`, the BMC event log), check its cord and feed, reseat or replace it.",
    "PSU_SENSOR_CRITICAL": "A voltage or current sensor went beyond its own critical threshold: if the test brought it there, the power delivery sags or overshoots under the GPUs' load (PSU, power cables, the board's regulators): read the BMC event log and replace the PSU or escalate to the vendor; one already there before the test (a CMOS battery, say) needs its own repair.",
    "PSU_SENSOR_WARNING": "A voltage or current sensor went beyond its own non-critical threshold: watch it; check the PSUs and the BMC event log, and re-run the pulse test.",
    "BMC_UNAVAILABLE": "The node's power supplies could not be read, so the power tests judged the GPUs only: install ipmitool (`apt-get install ipmitool`), load the in-band driver (`modprobe -a ipmi_devintf ipmi_si`) and re-run as root; a VM has no BMC.",
    "ROW_REMAP_PENDING": "Row remaps are pending: reset the GPU (or reboot) so they are applied, then re-run.",
    "ROW_REMAP_FAILED": "Row remapping failed: the GPU is out of spare rows or faulty; RMA it.",
    "ROW_REMAP_COUNT": "Many rows were remapped for uncorrectable errors: the memory is degrading; RMA the GPU.",
    "RETIRED_PAGES": "Memory pages were retired for memory errors (a lifetime count; pre-Ampere GPUs retire pages where newer ones remap rows): past the profile's limit (63 or more: DCGM's) the GPU's memory is worn out: RMA it.",
    "RETIRED_PAGES_PENDING": "Page retirement is pending: reboot the node so it takes effect, then re-run.",
    # Memory repair a GPU's generation does not use (NOT_APPLICABLE below): nothing was left untested.
    "PAGE_RETIREMENT_NA": "Nothing to do: Ampere and newer GPUs remap rows instead of retiring pages; health.row_remap judges their memory repairs.",
    "ROW_REMAP_NA": "Nothing to do: GPUs before Ampere retire pages instead of remapping rows; health.retired_pages judges their memory repairs.",
    # XIDs judged by NVIDIA's catalogue (nodeqc.core.xids; the message names the code, its meaning and
    # NVIDIA's immediate action; the evidence each event's grade): one code per action.
    "XID_RESET_GPU": "The driver reported an XID that needs the GPU reset (the message names it): stop the GPU's work, reset it (`nvidia-smi -r -i N`; a GPU on NVLink/NVSwitch may need the node rebooted) and re-run; if the same XID returns after the reset, the GPU needs hardware inspection: RMA it.",
    "XID_REBOOT": "The driver reported an XID that needs the node rebooted (the message names it, e.g. the GPU fell off the bus): reboot the node, check the GPU's seating, power cables and riser, read dmesg and the BMC's event log from the time given, then re-run; if it returns after the reboot, RMA the GPU (or the riser or baseboard it sits on).",
    "XID_CHECK_POWER": "The GPU reports its auxiliary power is not connected (XID 54): power the node off, connect and seat the GPU's power cables, check the PSUs, then re-run; if the cables are good, RMA the GPU.",
    "XID_CONTACT_SUPPORT": "The driver reported an XID NVIDIA's catalogue answers with 'contact support' (the message names it; codes unused on this GPU generation are among them): collect `nvidia-bug-report.sh` and the run's report, open a case with NVIDIA or the server vendor, and re-run after a GPU reset (`nvidia-smi -r -i N`).",
    "XID_APP_FAULT": "An XID that would usually blame the application came during nodeqc's own known-good work, alone on the GPU, so the GPU, its memory or the driver is the likelier cause: check that nothing else ran on the GPU (the stress checks name a co-tenant), reset the GPU (`nvidia-smi -r -i N`) and re-run; if the same XID returns, RMA the GPU.",
    "XID_REPEATED": "The same XID came again and again in one run (the message gives the count): a recurring error the driver's recovery does not clear needs the hardware inspected: reset the GPU (`nvidia-smi -r -i N`) and re-run once; if it recurs, RMA the GPU.",
    "XID_WARNING": "The driver reported a non-fatal XID (the message names it and the evidence gives NVIDIA's grade): note it, make sure the driver and firmware are current, and re-run; an XID that returns run after run needs the hardware inspected.",
    "XID_NOT_WATCHED": "NVML refused to report this GPU's XID events (nvmlDeviceRegisterEvents not supported, as in some VMs and passthrough setups), so the run could not watch them: read the kernel log's NVRM Xid lines (host.kernel_log does, as root: `dmesg | grep -i xid`), or run nodeqc on the bare-metal host.",
    "XID_UNKNOWN": "The driver reported an XID whose action NVIDIA's catalogue (as nodeqc read it) does not give: look the code up in NVIDIA's current XID catalogue (docs.nvidia.com/deploy/xid-errors), read dmesg around the time given, and re-run.",
    "GPU_LOST": "The GPU fell off the bus (a reset cannot reach it): reboot the node, read dmesg and the BMC's event log from the time given, then power the node off and reseat the GPU, its power cables and its riser, and re-run; RMA the GPU (or the riser or baseboard it sits on) if it falls off again.",
    # Matmul burn and burn-in. A slow GPU's diagnosis (nodeqc/checks/diagnosis.py) replaces these
    # codes with the cause's own (GPU_IN_USE, POWER_LIMIT_LOWERED, THROTTLE_*, CLOCKS_LOW) when
    # telemetry explains the slowness; what is left is the GPU's own.
    "BURN_LOAD_NOT_REACHED": "The burn computed too little of its planned time in a dtype for its rate to be a sustained one (the evidence gives each dtype's seconds and products): check that no other process shares the GPU, that the driver and CUDA libraries are healthy (dmesg, `nvidia-smi -q`), then re-run; if the GPU's products keep returning too soon, compare with a sibling GPU and escalate to the vendor.",
    "BURN_NO_DTYPE": "The burn ran none of the profile's dtypes on this GPU (the message says why for each, e.g. fp8 on a GPU older than Ada), so no matrix product was computed or checked: use the profile made for this GPU (`nodeqc profiles`), or set [gpu] dtypes to ones it supports, and re-run.",
    "BURN_SLOW": "The GPU sustained less matmul throughput than its model should at full clocks, with no throttling, lowered power limit or other process to explain it (see the diagnosis): re-run once to confirm, reseat the GPU and its power cables; if it stays slow at full clocks it computes less per cycle than its SKU (compute defect): RMA it.",
    "BURN_OUTLIER": "This GPU is markedly slower than its identical siblings in the node at similar clocks: compare its clocks, power and temperature with theirs in the evidence, fix any cooling or power difference, reseat it and re-run; RMA it if it stays the slow one.",
    "BURN_POWER_LOW": "The GPU drew well below its power limit under a full matmul load: check that every power cable to the GPU is seated and that the PSUs are healthy (BMC event log), and look for locked clocks (`nvidia-smi -q -d CLOCK,POWER`); a GPU that stays low at default settings is degraded: RMA it.",
    "SDC_KNOWN_ANSWER": "The GPU computed a wrong result for a product whose answer is known (silent data corruption): keep it out of service, reset it (`nvidia-smi -r -i N`) and re-run once; any wrong result again means RMA (the element, expected and actual values are in the evidence).",
    "SDC_REPEAT": "The same product gave different results on repeats (intermittent silent data corruption): keep the GPU out of service, check its cooling, reset it and re-run with --burn-in 1h; if it recurs, RMA the GPU.",
    "SDC_CROSS_GPU": "Identical work gave a different result on this GPU than on its siblings (silent data corruption): keep it out of service and re-run; if it again disagrees with the majority, RMA it. With no majority (two GPUs), re-run each beside a known-good GPU to find the wrong one.",
    "SDC_BURN_IN": "A wrong result appeared during the burn-in (silent data corruption under sustained load and heat): keep the GPU out of service, check its cooling and re-run the burn-in; a second occurrence means RMA.",
    "BURN_IN_SHORT": "The burn-in's work on this GPU ended before its planned time, or completed fewer than the two windows drift is judged from, so its stability was not shown (the message gives the seconds and windows): check that nothing else used or reset the GPU (dmesg, the journal's notices), then run the burn-in again for its full length.",
    "BURN_IN_DRIFT": "The matmul rate fell over the burn-in: with rising temperature or thermal throttling fix cooling (fans, airflow, heatsink, inlet temperature); with HW slowdown check the PSUs and power cables; at steady clocks and temperature the GPU is degrading: RMA it.",
    # Device memory
    "HBM_SLOW": "Device-memory bandwidth is below the floor for this GPU's model: check that the memory clock reaches its maximum (`nvidia-smi -q -d CLOCK`) and nothing else uses the GPU, then re-run; if it stays low at full memory clock the HBM or its controller is degraded: RMA the GPU.",
    "HBM_OUTLIER": "Device-memory bandwidth is well below the node's other GPUs: compare memory clocks and temperatures in the evidence, re-run; RMA the GPU if it stays the slow one at full memory clock.",
    "HBM_CORRUPT": "Data copied within device memory came back wrong: check ECC and row-remap state (`nvidia-smi -q -d ECC,ROW_REMAPPER`), reset the GPU so pending remaps apply, re-run with stress.memtest; RMA if corruption recurs.",
    "MEMTEST_ERRORS": "The memory pattern test read back wrong words: check ECC and row remapping (`nvidia-smi -q -d ECC,ROW_REMAPPER`); if remaps are pending, reset the GPU so they apply and re-run; errors after a reset mean RMA (give the vendor the addresses and flipped bits in the evidence).",
    "HBM_LOAD_NOT_REACHED": "The bandwidth test did not complete the passes of its buffer it planned, or measured no bandwidth, so its figure is no measurement (what it did is in the message and the evidence): check that nothing else uses the GPU and that it answers (`nvidia-smi`), reset it (`nvidia-smi -r -i N`) and re-run; if it falls short again, report it with the journal file.",
    "MEMTEST_LOAD_NOT_REACHED": "The memory test covered less of the free device memory than asked, or did not run every pattern, so 'no errors' covers only part of the memory: free the GPU of other processes and their memory (`nvidia-smi --query-compute-apps=pid,used_memory --format=csv`), reset it (`nvidia-smi -r -i N`) and re-run; if the coverage stays short, report it with the journal file.",
    # Host <-> device
    "PCIE_BW_LOW": "Host-device copy bandwidth is below the floor: check the link under load (`nvidia-smi -q -d PCIE`, `lspci -vv` LnkSta against LnkCap), reseat the GPU and riser, check the BIOS PCIe speed and that the GPU sits on the expected CPU socket; replace the riser or retimer if the link is full but the bandwidth stays low.",
    "PCIE_BW_OUTLIER": "This GPU's host copies are much slower than its siblings': compare its link width and generation under load and its NUMA node with theirs, reseat the GPU and riser; replace the riser or retimer if it persists.",
    "PCIE_COPY_CORRUPT": "Data copied to the GPU and back came back wrong: look for PCIe replays and AER errors (dmesg), reseat the GPU and riser and re-run; RMA the riser or the GPU if it recurs.",
    "PCIE_LOAD_NOT_REACHED": "The host copies moved no data in some direction, or ended before the time telemetry needs to read the link under traffic, so their figures are no measurement: check that pinned host memory can be allocated (free host memory, `ulimit -l`) and nothing else uses the GPU, then re-run; if they fall short again, report it with the journal file.",
    # GPU to GPU
    "P2P_SLOW": "GPU-to-GPU bandwidth is below the floor: check that every NVLink is up (`nvidia-smi nvlink -s`, health.nvlink), that the fabric manager runs on NVSwitch nodes, and for PCIe peers that ACS and the IOMMU do not route peer traffic through the CPU; reseat the GPU, RMA it if its links stay slow.",
    # A GPU whose fastest peer copy trails the node's (nodeqc/checks/stress/p2p.py, judge_p2p): the only
    # P2P judgement where the profile has no floor, as on nodes of PCIe cards.
    "P2P_OUTLIER": "This GPU's fastest copy to a peer is much slower than the other GPUs' copies over the same kind of path (NVLink, one PCIe switch, across the CPU sockets, as NVML reports the topology): check its PCIe or NVLink link under load (health.pcie_link, health.nvlink), that ACS and the IOMMU do not route its peer traffic through the CPU, reseat it; RMA it if it stays the slow one.",
    "P2P_PAIR_SLOW": "Two GPUs that are each fine copy slowly between them: a bad path between this pair (NVLink, NVSwitch or PCIe switch); compare `nvidia-smi topo -m` and `nvidia-smi nvlink -s` on both, reseat them; escalate the baseboard to the vendor if it persists.",
    "P2P_LATENCY": "GPU-to-GPU copy latency is above the limit: check that peer traffic is direct (`nvidia-smi topo -m` shows NV# or PIX, not SYS), ACS disabled on PCIe switches and the IOMMU in passthrough; check NVLink error counters.",
    "P2P_CORRUPT": "A GPU-to-GPU copy came back wrong: check NVLink error counters (`nvidia-smi nvlink -e`) and dmesg for XID 74, reseat the GPUs; RMA the GPU or baseboard if it recurs.",
    "P2P_NO_PEER_ACCESS": "GPUs that should reach each other directly cannot: on NVSwitch nodes start the fabric manager (same version as the driver); check `nvidia-smi topo -m`, the NVLink state, and that ACS/IOMMU settings allow peer-to-peer.",
    "NVLINK_DOWN": "NVLink links are down: check `nvidia-smi nvlink -s` and that the fabric manager runs on NVSwitch nodes, reseat the GPU on its baseboard (or its NVLink bridge); on a rack-scale NVLink tray (GB200/GB300 NVL72), whose GPUs reach the NVSwitch trays through the rack's NVLink spine, reseat the compute tray and check the NVSwitch trays and the spine cartridges its links land on; RMA the GPU, baseboard or tray if links stay down.",
    "NVLINK_ERRORS": "NVLink error counters grew (replays, recoveries or CRC errors): a marginal link; reseat the GPU or bridge, re-run and watch `nvidia-smi nvlink -e`; RMA the GPU or baseboard if the counts keep rising.",
    # Checks a node's make-up does not call for (NOT_APPLICABLE below): nothing was left untested.
    "NVLINK_NA": "Nothing to do: the GPU reports no NVLink (a PCIe card, or an SXM GPU alone in a VM) and the profile asks for none; stress.p2p judges its peer copies, if it has peers.",
    "ONE_GPU_NA": "Nothing to do: a node with one GPU has no GPU-to-GPU copies or all-reduce to test.",
    # NCCL
    "NCCL_NVLS_SLOW": "The all-reduce ran at a ring algorithm's rate, not NVLink SHARP's: NCCL falls back to its ring in silence when NVLS fails. Check that NVLS is not turned off (NCCL_NVLS_ENABLE), that NCCL (2.17 or newer) reports NVLS with NCCL_DEBUG=INFO, that the fabric manager runs and NVSwitch multicast works (its log; `nvidia-smi -q`, Fabric), and the NVSwitch firmware; re-run.",
    "NCCL_SLOW": "All-reduce bus bandwidth is below the floor: check that the fabric manager runs (NVSwitch), every NVLink is up (health.nvlink) and stress.p2p passed; NCCL_DEBUG=INFO shows the transport NCCL chose (SHM through the host means peer access failed); fix those and re-run.",
    "NCCL_WRONG_RESULT": "All-reduce returned a wrong sum on this GPU (silent data corruption on the GPU or its links): keep it out of service and re-run; check its NVLink errors (`nvidia-smi nvlink -e -i N`) and stress.p2p; RMA it if it recurs.",
    "NCCL_NOT_MEASURED": "The all-reduce's result does not prove what it claims (the message says what is missing: GPUs outside the group, no timed iteration, a bandwidth that is no number, a GPU whose share was not checked): check that the worker sees every GPU (CUDA_VISIBLE_DEVICES unset, no GPU in another process's exclusive use), that NCCL matches the driver's CUDA, and re-run; report it with the journal if it recurs.",
    "NCCL_UNAVAILABLE": "NCCL could not run: install the CUDA extra that brings it (`pip install 'nodeqc[cuda12]'` or `'nodeqc[cuda13]'`, matching the driver), then re-run stress.nccl.",
    # Performance diagnosis: the cause telemetry found for a slow GPU (nodeqc/checks/diagnosis.py),
    # and a GPU another process was using.
    "GPU_IN_USE": "Another compute process used this GPU, so its figures are not the GPU's own: find it (`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`, the pid is in the evidence), stop it or drain the node in the scheduler (`scontrol update nodename=$(hostname -s) state=drain reason=nodeqc`, on the node), then re-run.",
    "POWER_LIMIT_LOWERED": "The enforced power limit is below the GPU's default, so it cannot reach its rate: restore it (`nvidia-smi -i N -pl DEFAULT_W`) and remove whatever lowers it (a boot script, a DCGM or scheduler power policy, BMC power capping), then re-run.",
    "CLOCKS_LOW": "The SM clock stayed well below what this SKU sustains, with no throttle reason: look for locked or application clocks (`nvidia-smi -q -d CLOCK`; reset with `nvidia-smi -rgc` and `nvidia-smi -rac`), then re-run; if clocks stay low at default settings, reseat the GPU and RMA it.",
    # Stress workers
    "WORKER_HANG": "The stress work on this GPU stopped making progress and was killed: the GPU or its driver hung; reset the GPU, re-run, RMA if repeated.",
    "WORKER_CRASH": "The stress work on this GPU crashed: see the evidence (exit status, last output); reset the GPU and re-run.",
    "WORKER_ERROR": "The stress work on this GPU raised a CUDA error (out of memory, illegal address, ECC, launch failure; its text and traceback are in the evidence), which points at the GPU: reset it (`nvidia-smi -r -i N`) and re-run, RMA if it recurs.",
    "CUDA_UNAVAILABLE": "GPU stress needs CuPy: install nodeqc with the CUDA extra, e.g. `pip install 'nodeqc[cuda12]'`.",
    "SKIPPED_EARLIER_FAILURE": "Skipped because this GPU already failed in an earlier stress check; fix that first.",
    "RUN_ABORTED": "The run was stopped before this check ran or while it ran, so it judged nothing: run the qualification again (after a repair, with --retest) to judge it.",
    "MODEL_NOT_JUDGED": "This GPU is not a model the profile accepts (inventory.gpu_model), so its figures were not held to another model's floors: run with the profile of its own model (`nodeqc profiles` lists them; `--profile auto` picks it).",
    "NO_GPUS": "No GPUs were found, so GPU checks could not run.",
    "NOTHING_JUDGED": "No selected check reached a verdict, so the run showed nothing about the node (the reasons each did not run are in the message and the evidence): fix what kept them from running (another process on a GPU, a missing tool, a peer not given) or select checks that apply to this node, then re-run.",
    "INTERNAL_ERROR": "nodeqc hit an internal error in this check: report it with the journal file.",
    "HOST_NOT_HERE": "This host check reads or loads the machine nodeqc runs on, and this run has none of its own (a replay of a capture carries only the captured GPUs' NVML answers): run nodeqc on the node itself to judge its host.",
    "HOST_UNREADABLE": "sysfs could not be read at the start of the run, so host errors (EDAC, PCIe AER, the kernel log) were not watched: run nodeqc as root on the node itself, and check that /sys is mounted; the warning at the start names the file.",
}
# What XIDs mean, which are fatal and what to do about each: NVIDIA's catalogue (nodeqc.core.xids).


# Why a check did not run, in a few words, for the one-line count of checks not run
# ("25 not run: 17 no NIC peer given (pass --nic-peer), ..."); the remediation above says the rest.
NOT_RUN: dict[str, str] = {
    "NIC_NO_PEER": "no NIC peer given (pass --nic-peer)",
    "NIC_NO_ADDRESS": "NIC without an IP address",
    "IPERF3_MISSING": "iperf3 not installed",
    "PERFTEST_MISSING": "perftest (ib_write_bw) not installed",
    "SKIPPED_EARLIER_FAILURE": "the GPU failed an earlier stress check",
    "MODEL_NOT_JUDGED": "the GPU is not the profile's model",
    # Said as a check interrupted by the abort says it (nodeqc.checks.stress.outcomes): one reason in
    # the tally, not "23 the run was aborted before it, 8 the run was aborted".
    "RUN_ABORTED": "the run was aborted",
    "NO_GPUS": "no working GPUs",
    "CUDA_UNAVAILABLE": "CuPy not installed",
    "NO_LOAD": "the GPU was never under load",
    "BMC_UNAVAILABLE": "no BMC readable (ipmitool)",
    "HOST_NOT_HERE": "no live host (a replay)",
    "HOST_UNREADABLE": "sysfs not readable",
    "BASELINE_NOT_HERE": "part of the baseline not readable here (a replay)",
    "DCGM_MISSING": "DCGM not installed (dcgmi)",
    "DCGM_NOT_HERE": "no DCGM on a simulated or replayed node",
    "DCGM_OFF": "DCGM diagnostic switched off",
    "DCGM_TEST_SKIPPED": "DCGM skipped the test",
}


# Checks that do not apply to a GPU's generation: said once under the summary, never counted as a
# check not run (nothing was left untested). Pre-Ampere GPUs retire pages of failing memory;
# Ampere (compute capability 8.0) and newer remap rows instead, and NVML answers NotSupported to
# the other generation's interface (the captures in shared/measurements: the H100 SXM5 and the H200
# answer nvmlDeviceGetRemappedRows, and NOT_SUPPORTED to nvmlDeviceGetRetiredPages).
NOT_APPLICABLE: dict[str, str] = {
    "PAGE_RETIREMENT_NA": "page retirement (Ampere and newer GPUs remap rows instead)",
    "ROW_REMAP_NA": "row remapping (GPUs before Ampere retire pages instead)",
    "NVLINK_NA": "NVLink (none reported, none asked for)",
    "ONE_GPU_NA": "GPU-to-GPU copies and all-reduce (one GPU on this node)",
}


# When the same code comes back on the same part after a repair, the first remedy did not hold:
# the next step of the ladder (reseat -> replace the cable/riser -> RMA). The codes of a link
# (PCIe, NIC cable) have a middle step; for the others a repeat after a repair is already a
# replacement. {part} is the part's identity.
ESCALATION: dict[str, tuple[str, str]] = {
    "PCIE_WIDTH": ("Failed again after a repair: do not just reseat; replace the riser or cable of {part}, then re-test.",
                   "Failed after repeated repairs: RMA {part} (and the riser if it was not replaced)."),
    "PCIE_GEN": ("Failed again after a repair: replace the riser or cable of {part} (retimer), then re-test.",
                 "Failed after repeated repairs: RMA {part}."),
    "PCIE_REPLAY": ("Failed again after a repair: replace the riser or cable of {part}, then re-test.",
                    "Failed after repeated repairs: RMA {part}."),
    "NIC_PCIE_WIDTH": ("Failed again after a repair: replace the riser of {part}, then re-test.",
                       "Failed after repeated repairs: RMA {part}."),
    "NIC_LINK_DOWN": ("Failed again after a repair: replace the cable or transceiver of {part}, then re-test.",
                      "Failed after repeated repairs: RMA {part} (the switch port too, if a known-good cable fails)."),
    "NIC_LINK_FLAP": ("Failed again after a repair: replace the cable or transceiver of {part}, then re-test.",
                      "Failed after repeated repairs: RMA {part}."),
    "IB_LINK_ERRORS": ("Failed again after a repair: replace the cable or transceiver of {part}, then re-test.",
                       "Failed after repeated repairs: RMA {part}."),
}
# A setting that comes back is re-applied by something, not a faulty part; heat and power that come
# back are the chassis' first (fans, airflow, PSUs), the GPU's only once those are proven good (the
# 2026-11-28 advice review: a re-lowered power limit was told to RMA the GPU).
_SETTING = ("Came back after a repair: something re-applies it (a boot script, a DCGM or scheduler policy, BMC "
            "power capping, a configuration tool): find it and fix it at its source, then re-test {part}.",
            "Came back after repeated repairs: the setting is re-applied, not the part failing: fix what sets it "
            "(do not RMA {part} for it).")
_COOLING = ("Came back after a repair: look beyond {part}: the chassis' fan modules, airflow and blanking panels, "
            "the inlet temperature, then the heatsink's contact; re-test.",
            "Came back after repeated repairs with the chassis cooling proven good: RMA {part} (its heatsink or "
            "sensor).")
_POWER = ("Came back after a repair: look beyond {part}: the PSUs, their input and the node's power budget (BMC "
          "event log), the GPU's power cables; re-test.",
          "Came back after repeated repairs with the PSUs and cables proven good: RMA {part} or its baseboard.")
ESCALATION.update({code: _SETTING for code in ("POWER_LIMIT_LOWERED", "PERSISTENCE_OFF", "ECC_DISABLED",
                                               "BASELINE_CLOCKS", "BASELINE_POWER_LIMIT", "DRIVER_VERSION")})
ESCALATION.update({code: _COOLING for code in ("TEMP_HIGH", "TEMP_SLOWDOWN", "THROTTLE_THERMAL", "MEM_TEMP_HIGH",
                                               "DCGM_THERMAL")})
ESCALATION.update({code: _POWER for code in ("THROTTLE_HW_SLOWDOWN", "THROTTLE_POWER_BRAKE", "POWER_PULSE_THROTTLE",
                                             "DCGM_POWER")})
ESCALATION_DEFAULT = ("Failed again after a repair: the first remedy did not hold; replace {part} (RMA).",
                      "Failed after repeated repairs: RMA {part}.")


def escalation(code: str, step: int, part: object) -> str:
    """What to do when this code came back on this part after `step` repairs (1, 2 or more)."""
    ladder = ESCALATION.get(code, ESCALATION_DEFAULT)
    return ladder[min(step, len(ladder)) - 1].format(part=getattr(part, "identity", part))


def not_run_reason(code: str | None) -> str | None:
    return NOT_RUN.get(code) if code else None


def not_applicable_reason(code: str | None) -> str | None:
    """What does not apply to this GPU, for a SKIP that is not a check left unrun; None otherwise."""
    return NOT_APPLICABLE.get(code) if code else None


# The verdicts as counted for a person or a pipeline: "n/a" (a check that does not apply to this node's
# hardware, NOT_APPLICABLE) apart from "skip" (a check left unrun), as the answer's tally, the
# Prometheus textfile and `--headless --json` all count them.
COUNTED = ("pass", "warn", "fail", "skip", "n/a", "error")


def verdict_counts(counts: dict[str, Any], skipped_codes: Any) -> dict[str, int]:
    """counts by verdict (as the report's summary keeps them, n/a among the skips) with the skips whose
    code is not applicable (skipped_codes: the codes of the SKIP results) taken out into "n/a"; every
    verdict of COUNTED present, 0 where none."""
    na = sum(1 for code in skipped_codes if not_applicable_reason(code))
    out = {v: int(counts.get(v) or 0) for v in COUNTED if v != "n/a"}
    out["skip"] = max(0, out["skip"] - na)
    out["n/a"] = na
    return {v: out[v] for v in COUNTED}


# Advice for a code once the diagnosis (nodeqc.checks.diagnosis, evidence["diagnosis"]["cause"]) has
# ruled out what the code's own advice asks to check first: HBM_SLOW's first step is the memory
# clock, which a "defect" diagnosis found at its maximum.
_POWER_READING = ("The GPU computed at its SKU's full rate and clock while NVML read it drawing below the floor, so "
                  "its power delivery is not what held it back: compare NVML's reading (`nvidia-smi -q -d POWER`) "
                  "with the node's input power in the BMC (`ipmitool sdr type \"Power Supply\"`) under the same "
                  "load, update the GPU's VBIOS and driver if they disagree, and re-run.")
DIAGNOSED_REMEDIATION: dict[tuple[str, str], str] = {
    ("BURN_POWER_LOW", "power_reading"): _POWER_READING,
    ("POWER_TARGET_LOW", "power_reading"): _POWER_READING,
    ("HBM_SLOW", "defect"): "The memory ran at its full clock with no other process, power cap or throttling "
                            "(see the diagnosis), so neither a clock nor another job explains the bandwidth: re-run "
                            "once to confirm; if it stays below the floor the HBM or its controller is degraded: "
                            "RMA the GPU.",
    ("HBM_OUTLIER", "defect"): "This GPU's memory was at its full clock and still well below its siblings' "
                               "bandwidth (see the diagnosis): re-run once to confirm; RMA the GPU if it stays "
                               "the slow one.",
}


def remediation(code: str) -> str:
    """The code's advice as written, its placeholders unfilled (`-i N`: the GPU's index, DEFAULT_W:
    its default power limit); for one result, `advice`."""
    return REMEDIATION.get(code, "See the check's evidence.")


_COMMAND = re.compile(r"`([^`]*)`")


# What a warning says in place of an RMA: a warning is a figure in the band a healthy part can reach
# on a bad day, or a count to watch; only a failure whose cause is the part calls for one.
WARN_INSTEAD_OF_RMA = "A warning is no reason for an RMA: re-run to confirm."


# Advice for a WARN where cutting the RMA out of the FAIL's advice would leave the wrong step: a
# lifetime counter that a re-run cannot change, a corrected machine check that needs no replacement
# yet (the 2026-11-28 advice review).
WARN_REMEDIATION = {
    "ROW_REMAP_COUNT": "Rows were remapped for uncorrectable errors: a lifetime count, which a re-run does not change. "
                       "A few are the memory repairing itself: note the count in the node's record and compare it at "
                       "the next qualification; a count that keeps rising is a degrading memory.",
    "RETIRED_PAGES": "Memory pages were retired for memory errors: a lifetime count, which a re-run does not change. "
                     "Under the profile's limit (63: DCGM's) the GPU still works: note the count in the node's record "
                     "and compare it at the next qualification; a count that keeps rising is a wearing memory.",
    "KERNEL_MCE": "The CPU corrected a machine check during the run: decode it (rasdaemon's ras-mc-ctl, or mcelog) for "
                  "the bank and DIMM or CPU, and note it; corrected errors that recur on the same part mean replacing "
                  "it at the next maintenance.",
}
_RMA = re.compile(r"\bRMA\b")


ESTIMATED_INSTEAD_OF_RMA = ("The floor it fell short of is an estimate, not measured on a healthy part of this SKU: "
                            "compare with a known-good GPU of the same SKU before any RMA.")


def for_a_warning(text: str, instead: str = WARN_INSTEAD_OF_RMA) -> str:
    """A code's advice for a WARN: its clauses (split at '; ') that advise an RMA left out, the first
    one cut before its RMA, and a line saying a warning is no reason for one (`instead`). RMA as a
    word: the letters inside PERFORMANCE are none."""
    if not _RMA.search(text):
        return text
    clauses = text.rstrip(".").split("; ")
    kept = [c for c in clauses[1:] if not _RMA.search(c)]
    first = clauses[0]
    if _RMA.search(first):
        head = first[:_RMA.search(first).start()]
        first = head[:head.rfind(": ")] if ": " in head else ""
    return "; ".join([c for c in [first] + kept if c]).rstrip(",:; ") + ". " + instead


# An Xid the kernel log names is advised as health.xid advises the same Xid from NVML, by the action
# NVIDIA's catalogue gives it (the 2026-11-28 advice review: KERNEL_XID said "reset the GPU" for an
# Xid 79, whose GPU a reset cannot reach, and for Xid 54, which needs its power cables).
# An application's Xid during nodeqc's own known-good work (host_health.kernel_log, own_work): advised
# as health.xid advises it, XID_APP_FAULT.
OWN_WORK_APP_XID = "app_during_own_work"
KERNEL_XID_BY_ACTION = {"reset_gpu": "XID_RESET_GPU", "reboot": "XID_REBOOT", "check_power": "XID_CHECK_POWER",
                        "contact_support": "XID_CONTACT_SUPPORT", "unknown": "XID_UNKNOWN",
                        "ignore": "XID_WARNING", "restart_app": "XID_WARNING", "check_software": "XID_WARNING",
                        OWN_WORK_APP_XID: "XID_APP_FAULT"}


# inventory.homogeneity's evidence names the fields that differ: the step for each.
GPU_MIXED_BY_FIELD = {
    "model": "replace the GPU of another model with the node's own",
    "memory": "replace the GPU of another memory size with the node's own",
    "vbios": "flash the GPU on another VBIOS to the one the others run (the server vendor's firmware package)",
    "power_limit_w": "set the odd power limit as the others have it (`nvidia-smi -i N -pl W`)",
}


NO_TWIN_REMEDIATION = ("The replayed capture is of a GPU model nodeqc has no simulated twin for: its NVML answers are "
                       "judged, its GPU work cannot run. Run nodeqc on the captured machine itself, or replay a capture "
                       "of a model with a twin (`nodeqc scenarios` lists them).")


def advice(code: str, subject: str = "", evidence: Any = None, verdict: str | None = None) -> str:
    """The code's advice for one result, with what the result knows put in place of the
    placeholders: `-i N` becomes the GPU's own index (a `gpuN` subject), DEFAULT_W its default power
    limit (the diagnosis' readings, or the evidence's `default_power_limit_w`). A node's result that
    names several GPUs (evidence `per_gpu`: {index: {"default_power_limit_w": W}}) gets one command
    for each. A placeholder stays only where the result does not know the value. A WARN (`verdict`
    "warn") never advises an RMA (for_a_warning)."""
    text = remediation(code)
    if code == "GPU_MIXED" and isinstance(evidence, dict) and any(f in evidence for f in GPU_MIXED_BY_FIELD):
        # What differs says what to do: a VBIOS is flashed, not replaced (the 2026-11-28 advice review).
        text = "GPUs of one node must match: " + "; ".join(
            step for field, step in GPU_MIXED_BY_FIELD.items() if field in evidence) + "; then re-run."
    worker = evidence.get("worker") if isinstance(evidence, dict) else None
    if code == "CUDA_UNAVAILABLE" and isinstance(worker, dict) and "no simulated twin" in str(worker.get("detail")):
        # A replay's missing twin is no missing CuPy (it advised installing the CUDA extra, 2026-11-29 fuzzing).
        text = NO_TWIN_REMEDIATION
    action = evidence.get("xid_action") if isinstance(evidence, dict) and code == "KERNEL_XID" else None
    if action in KERNEL_XID_BY_ACTION:
        text = remediation(KERNEL_XID_BY_ACTION[action])
    diagnosis = evidence.get("diagnosis") if isinstance(evidence, dict) else None
    if isinstance(diagnosis, dict) and (code, diagnosis.get("cause")) in DIAGNOSED_REMEDIATION:
        text = DIAGNOSED_REMEDIATION[(code, diagnosis["cause"])]
    if verdict == "warn":
        text = WARN_REMEDIATION.get(code) or for_a_warning(text)
    elif isinstance(diagnosis, dict) and isinstance(diagnosis.get("readings"), dict) \
            and diagnosis["readings"].get("estimated_floors"):
        # The diagnosis says the part is not to blame on an estimated floor alone; the advice must not
        # say RMA either (the 2026-11-28 advice review: a T4 short of its estimated fp32 floor).
        text = for_a_warning(text, ESTIMATED_INSTEAD_OF_RMA)
    per_gpu = evidence.get("per_gpu") if isinstance(evidence, dict) else None
    if isinstance(per_gpu, dict) and per_gpu:
        def each(m: re.Match) -> str:
            if "-i N" not in m.group(1):
                return m.group(0)
            return ", ".join(f"`{_fill(m.group(1), str(i), _default_w(e))}`" for i, e in per_gpu.items())
        return _COMMAND.sub(each, text)
    gpu = re.fullmatch(r"gpu(\d+)", subject or "")
    return _fill(text, gpu.group(1) if gpu else None, _default_w(evidence))


def _fill(text: str, index: str | None, default_w: float | None) -> str:
    if index is not None:
        text = re.sub(r"-i N\b", f"-i {index}", text)
    if default_w is not None:
        text = text.replace("DEFAULT_W", f"{default_w:g}")
    return text


def _default_w(evidence: Any) -> float | None:
    if not isinstance(evidence, dict):
        return None
    readings = evidence.get("diagnosis", {}).get("readings", {}) if isinstance(evidence.get("diagnosis"), dict) else {}
    for value in (evidence.get("default_power_limit_w"), readings.get("default_power_limit_w") if isinstance(readings, dict) else None):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            return float(value)
    return None
