# The etcd image for lockjepsen (--runtime docker --topology etcd): FROM scratch,
# built by scripts/build-images.sh from a staging directory holding Debian's
# etcd binary (etcd-server, `make setup-etcd`) and exactly the shared libraries
# `ldd` lists for it (none when it is static). Nothing is pulled.
#
# Each member is started with its whole command line (cluster/etcd_docker.go);
# its data dir and log sit in the bind-mounted /data.
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENV PATH=/usr/local/bin
EXPOSE 2379 2380
CMD ["/usr/local/bin/etcd", "--version"]
