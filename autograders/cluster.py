"""Who may reach the workers of a grading cluster of several machines: Dask's own TLS.

The grade command is a Dask client, and a Dask scheduler or worker runs
whatever a connected client sends it, as the account that started it. So a
cluster the grade command is given (``--scheduler``) is authenticated and
encrypted with Dask's TLS security (:class:`distributed.security.Security`):
both ends of every connection show a certificate signed by the cluster's own
authority, and a peer without one is refused before it can send anything.
:func:`cluster_security` takes ``tls://`` only, with the certificates
``python -m autograders cluster-certs DIR`` makes (:func:`make_certificates`):
a private certificate authority, and one certificate and key for the
cluster's members (scheduler, workers, the grade command), each file
readable by its owner only. (The cluster the grade command makes on its own
machine needs none of this: :mod:`autograders.private_cluster`.)
"""

from __future__ import annotations

import argparse
import datetime
import os
import stat
import sys
from pathlib import Path

#: The files ``cluster-certs`` writes, as the dask command-line options that take them.
FILES = {"tls-ca-file": "ca.pem", "tls-cert": "cluster.pem", "tls-key": "cluster-key.pem"}
NAME = "mhsa-grading-cluster"  # the members' certificate names no host: Dask checks none


class InsecureCluster(ValueError):
    """A cluster the grade command will not use: not ``tls://``, or its credentials unusable."""


def cluster_security(scheduler: str, ca_file, cert, key):
    """The grade command's credentials for the cluster at ``scheduler``.

    Parameters
    ----------
    scheduler : str
        The scheduler's address; it must be ``tls://HOST:PORT``.
    ca_file, cert, key : str or Path or None
        The cluster's certificate authority, the members' certificate and
        its private key (``cluster-certs``' ``ca.pem``, ``cluster.pem``,
        ``cluster-key.pem``).

    Returns
    -------
    distributed.security.Security
        Client credentials, encryption required.

    Raises
    ------
    InsecureCluster
        The address is not ``tls://``; a file is not given, not there, or
        (the key) readable by other accounts.
    """
    from distributed.security import Security

    if not scheduler.startswith("tls://"):
        protocol = scheduler.split("://")[0] + "://" if "://" in scheduler else "no protocol"
        raise InsecureCluster(
            f"--scheduler {scheduler} is not encrypted ({protocol}); expected a tls:// address "
            "of a cluster started with --tls-ca-file, --tls-cert and --tls-key (see the "
            "README, 'Grading on a cluster'): any account that reaches an unencrypted "
            "cluster runs its code on the workers."
        )
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    missing = [option for option, path in given.items() if not path]
    if missing:
        raise InsecureCluster(
            f"--scheduler {scheduler} needs --tls-ca-file, --tls-cert and --tls-key "
            f"(the files `python -m autograders cluster-certs DIR` makes); "
            f"missing: {', '.join(missing)}."
        )
    for option, path in given.items():
        if not Path(path).is_file():
            raise InsecureCluster(f"{option} {path}: expected a file, found none.")
    mode = stat.S_IMODE(os.stat(key).st_mode)
    if mode & 0o077:
        raise InsecureCluster(
            f"--tls-key {key} is readable by other accounts (mode {mode:04o}); expected "
            f"mode 0600: whoever reads it can join the cluster (chmod 600 {key})."
        )
    return Security(
        require_encryption=True,
        tls_ca_file=str(ca_file),
        tls_client_cert=str(cert),
        tls_client_key=str(key),
    )


def make_certificates(folder: Path, days: int = 365) -> dict:
    """Write a private certificate authority and the cluster members' certificate in ``folder``.

    The authority's key signs the members' certificate and is then thrown
    away: no one can sign another. The members' certificate serves as
    client and server, so the scheduler, every worker and the grade command
    use the same three files.

    Parameters
    ----------
    folder : Path
        A new or empty folder; made with mode 0700.
    days : int
        How long the certificates are valid.

    Returns
    -------
    dict
        ``{dask option: path}`` for ``tls-ca-file``, ``tls-cert``, ``tls-key``;
        each file has mode 0600.

    Raises
    ------
    FileExistsError
        ``folder`` exists and is not empty.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if any(folder.iterdir()):
        found = ", ".join(sorted(p.name for p in folder.iterdir())[:5])
        raise FileExistsError(f"{folder}: expected a new or empty folder, found {found}")
    folder.chmod(0o700)
    now = datetime.datetime.now(datetime.UTC)
    valid = dict(not_valid_before=now - datetime.timedelta(minutes=5))
    valid["not_valid_after"] = now + datetime.timedelta(days=days)

    def name(text):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder(**valid)
        .subject_name(name(f"{NAME} authority"))
        .issuer_name(name(f"{NAME} authority"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder(**valid)
        .subject_name(name(NAME))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(digital_signature=True, key_agreement=True), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    contents = {
        "tls-ca-file": ca.public_bytes(pem),
        "tls-cert": cert.public_bytes(pem),
        "tls-key": key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    }
    paths = {}
    for option, data in contents.items():
        path = folder / FILES[option]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(path, 0o600)  # whatever the umask
        paths[option] = path
    return paths


def _usage(**on):
    """An X.509 key usage extension with the flags in ``on`` set, the others not."""
    from cryptography import x509

    flags = (
        "digital_signature content_commitment key_encipherment data_encipherment "
        "key_agreement key_cert_sign crl_sign encipher_only decipher_only"
    ).split()
    return x509.KeyUsage(**{flag: on.get(flag, False) for flag in flags})


def main(argv=None) -> int:
    """``python -m autograders cluster-certs DIR``: make the certificates, say how to use them.

    Parameters
    ----------
    argv : list of str, optional
        The command's arguments (default: the command line's).

    Returns
    -------
    int
        The exit code: 0, or 2 when ``DIR`` is not new or empty.
    """
    p = argparse.ArgumentParser(
        prog="python -m autograders cluster-certs",
        description="Make the TLS certificates of a Dask grading cluster (see the README).",
    )
    p.add_argument("folder", type=Path, help="a new or empty folder")
    p.add_argument("--days", type=int, default=365, help="validity (default: 365 days)")
    a = p.parse_args(argv)
    try:
        paths = make_certificates(a.folder, a.days)
    except FileExistsError as exc:
        print(f"not writing certificates: {exc}", file=sys.stderr)
        return 2
    flags = " ".join(f"--{option} {path}" for option, path in paths.items())
    print(
        f"wrote {', '.join(p.name for p in paths.values())} in {a.folder} (mode 0600; the key "
        "admits to the cluster: copy the folder to each machine, readable by the grading "
        f"account only). Give every dask scheduler, dask worker and the grade command:\n{flags}"
    )
    return 0
