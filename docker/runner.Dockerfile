# lockjepsen/runner: one shard of a sweep in one container, on the local
# runtime (docs/sweep.md, deploy/kubernetes/). FROM scratch, built by
# scripts/build-images.sh from a staging directory holding the static
# lockjepsen binary, the locally built Valkey 9 binaries, exactly the shared
# libraries `ldd` lists for them and for libfaketime, and libfaketime at the
# path lockjepsen looks for it. Nothing is pulled.
#
#   docker run --rm -v $PWD/results:/results -e JOB_COMPLETION_INDEX=0 lockjepsen/runner \
#     sweep --shard /2 --out /results/shard-0
FROM scratch
COPY rootfs/ /
WORKDIR /results
ENV PATH=/usr/local/bin LOCKJEPSEN_VALKEY_BIN=/usr/local/bin TMPDIR=/tmp HOME=/tmp
ENTRYPOINT ["/usr/local/bin/lockjepsen"]
CMD ["sweep", "--help"]
