# Snakemake rules of the systems stage (included by the root Snakefile).
# Append this stage's final targets to ALL_TARGETS (a list the Snakefile defines before the includes).
#
# What other stages use from here (see systems/README.md, "For Snakemake rules"):
#   SYSTEMS_DIST_STAMP["kafka"|"pulsar"|"pravega"]  - put it in the `input:` of every rule that starts a cluster
#   SYSTEMS_VERSIONS["kafka"|"pulsar"]    - the versions from the root pom.xml (for provenance/paths)
#   shell: python -m systems up SYSTEM --level L --tuning T --dir RUNDIR && <run> ; rc=$?;
#          python -m systems down --dir RUNDIR; exit $rc        (hold resources: cluster=1)
import glob

from systems.util import cache_dir as _sys_cache_dir, versions as _sys_versions

SYSTEMS_VERSIONS = _sys_versions()
_SYS_CACHE = str(_sys_cache_dir())
SYSTEMS_DIST_STAMP = {
    s: f"{_SYS_CACHE}/dist/{s}-{SYSTEMS_VERSIONS[s]}.prepared" for s in ("kafka", "pulsar", "pravega")
}
ALL_TARGETS.extend(SYSTEMS_DIST_STAMP.values())


rule systems_prepare_kafka:
    """Kafka jars (kafka_2.13, kafka-tools, log4j2 binding) from Maven Central into the cache."""
    input:
        "pom.xml",
        "systems/kafka/pom.xml",
    output:
        SYSTEMS_DIST_STAMP["kafka"],
    log:
        "logs/systems/prepare-kafka.log",
    params:
        marker=f"{_SYS_CACHE}/dist/kafka-{SYSTEMS_VERSIONS['kafka']}/.streambench-dist.json",
    shell:
        "python -m systems prepare kafka 2> {log} && cp {params.marker} {output}"


rule systems_prepare_pulsar:
    """The official Pulsar server tarball from Maven Central, sha512-checked, unpacked into the cache."""
    input:
        "pom.xml",
        "systems/pulsar/pom.xml",
        "systems/pulsar/dist.sha512",
    output:
        SYSTEMS_DIST_STAMP["pulsar"],
    log:
        "logs/systems/prepare-pulsar.log",
    params:
        marker=f"{_SYS_CACHE}/dist/pulsar-{SYSTEMS_VERSIONS['pulsar']}/.streambench-dist.json",
    shell:
        "python -m systems prepare pulsar 2> {log} && cp {params.marker} {output}"


rule systems_prepare_pravega:
    """Pravega controller + segment store and BookKeeper/ZooKeeper jars from Maven Central, plus the loopback patch
    classes compiled against them (systems/pravega/patch)."""
    input:
        "pom.xml",
        "systems/pravega/pom.xml",
        sorted(glob.glob("systems/pravega/patch/**/*.java", recursive=True)),
    output:
        SYSTEMS_DIST_STAMP["pravega"],
    log:
        "logs/systems/prepare-pravega.log",
    params:
        marker=f"{_SYS_CACHE}/dist/pravega-{SYSTEMS_VERSIONS['pravega']}/.streambench-dist.json",
    shell:
        "python -m systems prepare pravega 2> {log} && cp {params.marker} {output}"
