package io.leasehold.spring.boot;

import io.leasehold.LeaseBackend;
import io.leasehold.integration.LeaseholdLockRegistry;
import io.leasehold.shedlock.LeaseholdLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Leasehold for Spring Boot. With {@code leasehold.backend} set it makes:
 *
 * <ul>
 *   <li>a {@link LeaseBackend} opened on that URI, closed with the context (which releases every
 *       lease it still holds, so a graceful shutdown hands the leases on at once);</li>
 *   <li>a {@link LeaseSettingsTemplate} with the {@code leasehold.lease.*} defaults;</li>
 *   <li>a ShedLock {@link LockProvider} when ShedLock and {@code leasehold-shedlock} are on the
 *       class path ({@code leasehold.shedlock.enabled=false} turns it off);</li>
 *   <li>a Spring Integration {@link LockRegistry} when Spring Integration and {@code
 *       leasehold-spring-integration} are on the class path ({@code
 *       leasehold.integration.enabled=false} turns it off).</li>
 * </ul>
 *
 * Each bean backs off when the application defines its own.
 */
@AutoConfiguration
@ConditionalOnProperty(prefix = "leasehold", name = "backend")
@EnableConfigurationProperties(LeaseholdProperties.class)
public class LeaseholdAutoConfiguration {

  /**
   * The lease store.
   *
   * @param properties the settings
   * @return the backend; Spring calls its {@code close()} when the context closes
   */
  @Bean
  @ConditionalOnMissingBean
  public LeaseBackend leaseBackend(LeaseholdProperties properties) {
    String uri = properties.getBackend();
    try {
      return LeaseBackend.open(uri);
    } catch (IllegalArgumentException e) {
      throw new InvalidConfigurationPropertyValueException("leasehold.backend", uri, e.getMessage());
    }
  }

  /**
   * The lease defaults.
   *
   * @param properties the settings
   * @return lease name to settings
   */
  @Bean
  @ConditionalOnMissingBean
  public LeaseSettingsTemplate leaseSettingsTemplate(LeaseholdProperties properties) {
    return new LeaseSettingsTemplate(properties);
  }

  /** The ShedLock provider. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({LockProvider.class, LeaseholdLockProvider.class})
  @ConditionalOnProperty(prefix = "leasehold.shedlock", name = "enabled", matchIfMissing = true)
  static class ShedLockConfiguration {
    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    LeaseholdLockProvider leaseholdLockProvider(
        LeaseBackend backend, LeaseSettingsTemplate settings, LeaseholdProperties properties) {
      LeaseholdProperties.Shedlock shedlock = properties.getShedlock();
      LeaseholdLockProvider.Builder b =
          LeaseholdLockProvider.builder(backend).settings(settings).namePrefix(shedlock.getNamePrefix());
      try {
        b.minimumTtl(shedlock.getMinimumTtl());
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(
            "leasehold.shedlock.minimum-ttl", shedlock.getMinimumTtl(), e.getMessage());
      }
      return b.build();
    }
  }

  /** The Spring Integration lock registry. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({LockRegistry.class, LeaseholdLockRegistry.class})
  @ConditionalOnProperty(prefix = "leasehold.integration", name = "enabled", matchIfMissing = true)
  static class LockRegistryConfiguration {
    @Bean
    @ConditionalOnMissingBean(LockRegistry.class)
    LeaseholdLockRegistry leaseholdLockRegistry(
        LeaseBackend backend, LeaseSettingsTemplate settings, LeaseholdProperties properties) {
      return new LeaseholdLockRegistry(backend, settings, properties.getIntegration().getNamePrefix());
    }
  }
}
