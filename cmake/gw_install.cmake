# `cmake --install` to the layout of a Debian tool (docs/install.md). With
# --prefix /usr: the programs in /usr/bin, their helpers and the simulated
# NVML library in /usr/lib/gpuwarden (outside the linker's search path: the
# simulator never stands in for the driver's libnvidia-ml.so.1), the man
# pages, completions, units, the configuration file and the monitoring files.
include(GNUInstallDirs)

# The programs read /etc/gpuwarden/config.toml whatever the prefix
# (config::kDefaultConfigPath), so that is where it goes; /etc/default is
# systemd's EnvironmentFile of the units.
set(GW_SYSCONF_DIR "/etc" CACHE PATH "Where config.toml and default/gpuwardend are installed")
# Where systemd reads the units of packages (Debian 12: /lib/systemd/system).
set(GW_SYSTEMD_UNIT_DIR "/lib/systemd/system" CACHE PATH "Where the systemd units are installed")
set(GW_LIBEXEC_DIR "${CMAKE_INSTALL_LIBDIR}/gpuwarden")
# GNUInstallDirs' multiarch libdir (lib/x86_64-linux-gnu) is for shared
# libraries others link; the helpers live in lib/gpuwarden, where the programs
# look for them (../lib/gpuwarden beside /usr/bin).
if(CMAKE_INSTALL_LIBDIR MATCHES "^lib/")
  set(GW_LIBEXEC_DIR "lib/gpuwarden")
endif()

install(TARGETS gpuwarden gpuwardend RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS gpuwarden-tools gpuwarden-supervise gpuwarden-power RUNTIME DESTINATION ${GW_LIBEXEC_DIR})
# The simulated server (`gpuwarden --sim FILE`, docs/scenarios.md): the
# library in a folder of its own, found only by --sim and GPUWARDEN_NVML_LIB.
if(TARGET gw_nvml_sim)
  install(TARGETS gw_nvml_sim LIBRARY DESTINATION ${GW_LIBEXEC_DIR}/sim)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/scenarios/
          DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuwarden/scenarios
          FILES_MATCHING PATTERN "*.json" PATTERN "README.md" PATTERN "expected" EXCLUDE)
endif()

# `gpuwarden advise`'s model and GPU catalogs, found from lib/gpuwarden.
install(FILES ${PROJECT_SOURCE_DIR}/catalog/models.toml ${PROJECT_SOURCE_DIR}/catalog/gpus.toml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuwarden/catalog)

set(gw_pkg ${PROJECT_SOURCE_DIR}/packaging)
install(FILES ${gw_pkg}/man/gpuwarden.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${gw_pkg}/man/gpuwarden-config.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${gw_pkg}/man/gpuwardend.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${gw_pkg}/completions/gpuwarden.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME gpuwarden)
install(FILES ${gw_pkg}/completions/_gpuwarden
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${gw_pkg}/completions/gpuwarden.fish
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${gw_pkg}/systemd/gpuwardend.service ${gw_pkg}/systemd/gpuwardend-exporter.service
        DESTINATION ${GW_SYSTEMD_UNIT_DIR})
# Conffiles of the package: /etc/gpuwarden/config.toml, /etc/default/gpuwardend.
install(FILES ${gw_pkg}/config.toml DESTINATION ${GW_SYSCONF_DIR}/gpuwarden)
install(FILES ${gw_pkg}/default/gpuwardend DESTINATION ${GW_SYSCONF_DIR}/default)
# Slurm's ResumeProgram and SuspendProgram for cloud nodes, templates a site
# fills in (conffiles; docs/capacity.md); they exec lib/gpuwarden/gpuwarden-power.
install(PROGRAMS ${gw_pkg}/slurm/resume ${gw_pkg}/slurm/suspend
        DESTINATION ${GW_SYSCONF_DIR}/gpuwarden/slurm)
install(FILES ${gw_pkg}/prometheus/gpuwarden.rules.yml ${gw_pkg}/prometheus/gpuwarden.rules.test.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuwarden/prometheus)
install(FILES ${gw_pkg}/grafana/gpuwarden.json DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuwarden/grafana)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
