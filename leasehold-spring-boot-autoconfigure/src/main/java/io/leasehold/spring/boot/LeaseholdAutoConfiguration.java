package io.leasehold.spring.boot;

import io.leasehold.BackendUris;
import io.leasehold.LeaseBackend;
import io.leasehold.integration.LeaseholdLockRegistry;
import io.leasehold.shedlock.LeaseholdLockProvider;
import java.time.Duration;
import java.util.Map;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.support.BeanDefinitionBuilder;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
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
 *       leasehold.integration.enabled=false} turns it off);</li>
 *   <li>a {@link LeaseholdLeaderInitiator} per {@code leasehold.leader-election.<role>} entry,
 *       started and stopped with the context;</li>
 *   <li>a {@link LeaseholdHealthIndicator} when Spring Boot Actuator is on the class path ({@code
 *       management.health.leasehold.enabled=false} turns it off).</li>
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
      // Counted for the health indicator; unwrap() gives the backend's own class.
      return new CountingLeaseBackend(LeaseBackend.open(uri));
    } catch (IllegalArgumentException e) {
      // The value as Spring shows it: without a password someone wrote into it.
      throw new InvalidConfigurationPropertyValueException(
          "leasehold.backend", BackendUris.redacted(uri), e.getMessage());
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

  /** The leader elections of {@code leasehold.leader-election.<role>}: one bean per role. */
  @Configuration(proxyBeanMethods = false)
  @Import(LeaderElectionRegistrar.class)
  static class LeaderElectionConfiguration {
    @Bean
    LeaderInitiatorFactory leaseholdLeaderInitiatorFactory(
        LeaseBackend backend, LeaseSettingsTemplate settings, LeaseholdProperties properties) {
      return new LeaderInitiatorFactory(backend, settings, properties);
    }
  }

  /** Makes the initiator of one configured role; the registrar names one bean per role. */
  static final class LeaderInitiatorFactory {
    private final LeaseBackend backend;
    private final LeaseSettingsTemplate settings;
    private final LeaseholdProperties properties;

    LeaderInitiatorFactory(LeaseBackend backend, LeaseSettingsTemplate settings, LeaseholdProperties properties) {
      this.backend = backend;
      this.settings = settings;
      this.properties = properties;
    }

    LeaseholdLeaderInitiator create(String role) {
      LeaseholdProperties.LeaderElection config =
          properties.getLeaderElection().getOrDefault(role, new LeaseholdProperties.LeaderElection());
      String leaseName = config.getLeaseName() != null ? config.getLeaseName() : "leader/" + role;
      io.leasehold.LeaseSettings lease;
      try {
        lease = settings.apply(leaseName);
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationPropertyValueException(
            "leasehold.leader-election." + role + ".lease-name", leaseName, e.getMessage());
      }
      LeaseholdLeaderInitiator initiator = new LeaseholdLeaderInitiator(role, backend, lease);
      initiator.setAutoStartup(config.isAutoStartup());
      return initiator;
    }
  }

  /** Registers a {@link LeaseholdLeaderInitiator} bean per key of {@code leasehold.leader-election}. */
  static final class LeaderElectionRegistrar implements ImportBeanDefinitionRegistrar, EnvironmentAware {
    private Environment environment;

    @Override
    public void setEnvironment(Environment environment) {
      this.environment = environment;
    }

    @Override
    public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
      Map<String, LeaseholdProperties.LeaderElection> roles =
          Binder.get(environment)
              .bind("leasehold.leader-election", Bindable.mapOf(String.class, LeaseholdProperties.LeaderElection.class))
              .orElse(Map.of());
      for (String role : roles.keySet()) {
        registry.registerBeanDefinition(
            "leaseholdLeaderInitiator-" + role,
            BeanDefinitionBuilder.genericBeanDefinition(LeaseholdLeaderInitiator.class)
                .setFactoryMethodOnBean("create", "leaseholdLeaderInitiatorFactory")
                .addConstructorArgValue(role)
                .getBeanDefinition());
      }
    }
  }

  /**
   * The Actuator health indicator. Two levels on purpose: Spring loads the condition classes of
   * all of a class's conditions before it evaluates any, so {@code
   * ConditionalOnEnabledHealthIndicator} (whose condition class is in Actuator) must sit on a
   * class that is only read once Actuator is known to be present; on one class, an application
   * without Actuator failed to start (found by {@code noIndicatorWithoutActuator}).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  static class HealthConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnEnabledHealthIndicator("leasehold")
    static class EnabledHealthConfiguration {
      @Bean
      @ConditionalOnMissingBean(name = "leaseholdHealthIndicator")
      LeaseholdHealthIndicator leaseholdHealthIndicator(
          LeaseBackend backend, LeaseholdProperties properties, ObjectProvider<LeaseholdLeaderInitiator> initiators) {
        LeaseholdProperties.Health health = properties.getHealth();
        try {
          io.leasehold.LeaseSettings.builder(health.getProbeLease(), "health");
        } catch (IllegalArgumentException | NullPointerException e) {
          throw new InvalidConfigurationPropertyValueException(
              "leasehold.health.probe-lease", health.getProbeLease(), e.getMessage());
        }
        Duration timeout = health.getTimeout();
        if (timeout == null || timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
          throw new InvalidConfigurationPropertyValueException(
              "leasehold.health.timeout", timeout, "timeout must be between 1 ms and 1 min");
        }
        return new LeaseholdHealthIndicator(
            backend, health.getProbeLease(), timeout, initiators.orderedStream().toList());
      }
    }
  }
}
