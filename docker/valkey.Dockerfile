# The Valkey image for lockjepsen: FROM scratch, built by scripts/build-images.sh
# from a staging directory holding the locally built Valkey 9 binaries, exactly
# the shared libraries `ldd` lists for them and for libfaketime, and libfaketime
# itself (clock faults). Nothing is pulled: this machine has no registry.
#
# Layout follows the official valkey/valkey image (binaries in /usr/local/bin,
# data in /data) so that docker-compose.yml works with either image.
FROM scratch
COPY rootfs/ /
WORKDIR /data
# The dynamic loader finds the copied libraries at the paths ldd named; the
# faketime library sits where the runtime's LD_PRELOAD points.
ENV PATH=/usr/local/bin
EXPOSE 6379 26379
CMD ["/usr/local/bin/valkey-server", "--bind", "0.0.0.0", "--protected-mode", "no"]
