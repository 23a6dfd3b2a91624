package io.leasehold.bench;

import java.util.Map;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Default values of the shared options ({@link LoadOptions}), which differ per command; the help
 * shows them through {@code ${DEFAULT-VALUE}}.
 */
abstract class CommandDefaults implements IDefaultValueProvider {

  private final Map<String, String> defaults;

  CommandDefaults(Map<String, String> defaults) {
    this.defaults = defaults;
  }

  @Override
  public String defaultValue(ArgSpec arg) {
    return arg instanceof OptionSpec o ? defaults.get(o.longestName()) : null;
  }
}
