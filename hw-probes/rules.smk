# Snakemake rules of the hw-probes stage (included by the root Snakefile).
# Append this stage's final targets to ALL_TARGETS (a list the Snakefile defines before the includes).
