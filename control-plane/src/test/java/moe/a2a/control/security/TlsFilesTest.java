package moe.a2a.control.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import moe.a2a.testing.TestCertificates;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsFilesTest {
    @TempDir Path dir;

    @Test
    void shouldPresentTheRenewedCertificateOnceItsFilesChange() throws Exception {
        TestCertificates ca = TestCertificates.authority("ca");
        TestCertificates.Leaf first = ca.issue(dir, "first");
        try (TlsFiles tls =
                TlsFiles.load(first.certificate(), first.key(), null, Duration.ofMillis(100))) {
            assertThat(tls.presented()).contains("CN=first");
            TestCertificates.Leaf renewed = ca.issue(dir, "renewed");
            Files.copy(
                    renewed.certificate(),
                    first.certificate(),
                    StandardCopyOption.REPLACE_EXISTING);
            Files.copy(renewed.key(), first.key(), StandardCopyOption.REPLACE_EXISTING);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!tls.presented().contains("renewed") && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(tls.presented()).contains("CN=renewed");
        }
    }
}
