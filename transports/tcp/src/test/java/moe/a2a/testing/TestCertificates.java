package moe.a2a.testing;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * Throwaway certificate authorities and the certificates they sign, written as PEM files for the
 * TLS tests (nothing is committed). Leaf certificates name {@code localhost} and {@code 127.0.0.1}.
 */
public final class TestCertificates {
    private static final AtomicLong SERIAL = new AtomicLong(System.nanoTime());

    private final X500Name name;
    private final KeyPair keys;
    private final X509Certificate certificate;

    private TestCertificates(X500Name name, KeyPair keys, X509Certificate certificate) {
        this.name = name;
        this.keys = keys;
        this.certificate = certificate;
    }

    /** A new self-signed certificate authority named {@code cn}. */
    public static TestCertificates authority(String cn) throws Exception {
        X500Name name = new X500Name("CN=" + cn);
        KeyPair keys = newKeys();
        X509v3CertificateBuilder b = builder(name, name, keys);
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        return new TestCertificates(name, keys, sign(b, keys));
    }

    /** Writes this authority's certificate to {@code dir/NAME.pem}, a trust file. */
    public Path writeCertificate(Path dir, String fileName) throws IOException {
        return writePem(dir.resolve(fileName), certificate);
    }

    /**
     * Issues a leaf certificate for {@code cn} (valid for localhost and 127.0.0.1) and writes
     * {@code dir/NAME.crt} and {@code dir/NAME.key} (PKCS#8).
     */
    public Leaf issue(Path dir, String cn) throws Exception {
        KeyPair leafKeys = newKeys();
        X509v3CertificateBuilder b = builder(name, new X500Name("CN=" + cn), leafKeys);
        b.addExtension(
                Extension.subjectAlternativeName,
                false,
                new GeneralNames(
                        new GeneralName[] {
                            new GeneralName(GeneralName.dNSName, "localhost"),
                            new GeneralName(GeneralName.iPAddress, "127.0.0.1")
                        }));
        X509Certificate cert = sign(b, keys);
        Path crt = writePem(dir.resolve(cn + ".crt"), cert);
        Path key =
                writePem(
                        dir.resolve(cn + ".key"),
                        new JcaPKCS8Generator(leafKeys.getPrivate(), null).generate());
        return new Leaf(crt, key, cert, leafKeys.getPrivate());
    }

    /** A trust manager that trusts what this authority signed. */
    public X509ExtendedTrustManager trustManager() throws GeneralSecurityException, IOException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setCertificateEntry("ca", certificate);
        TrustManagerFactory f =
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        f.init(store);
        return (X509ExtendedTrustManager) f.getTrustManagers()[0];
    }

    /** A leaf certificate and its key, in files and in memory. */
    public record Leaf(Path certificate, Path key, X509Certificate x509, PrivateKey privateKey) {

        /** A key manager presenting this certificate. */
        public X509ExtendedKeyManager keyManager() throws GeneralSecurityException, IOException {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            char[] password = "test".toCharArray();
            store.setKeyEntry("leaf", privateKey, password, new X509Certificate[] {x509});
            KeyManagerFactory f =
                    KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            f.init(store, password);
            return (X509ExtendedKeyManager) f.getKeyManagers()[0];
        }
    }

    private static KeyPair newKeys() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(256);
        return g.generateKeyPair();
    }

    private static X509v3CertificateBuilder builder(
            X500Name issuer, X500Name subject, KeyPair keys) {
        Instant now = Instant.now();
        return new JcaX509v3CertificateBuilder(
                issuer,
                BigInteger.valueOf(SERIAL.incrementAndGet()),
                Date.from(now.minus(Duration.ofHours(1))),
                Date.from(now.plus(Duration.ofDays(1))),
                subject,
                keys.getPublic());
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, KeyPair signer)
            throws Exception {
        return new JcaX509CertificateConverter()
                .getCertificate(
                        b.build(
                                new JcaContentSignerBuilder("SHA256withECDSA")
                                        .build(signer.getPrivate())));
    }

    private static Path writePem(Path file, Object object) throws IOException {
        StringWriter text = new StringWriter();
        try (JcaPEMWriter pem = new JcaPEMWriter(text)) {
            pem.writeObject(object);
        }
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, text.toString());
        return Files.move(
                tmp,
                file,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
}
