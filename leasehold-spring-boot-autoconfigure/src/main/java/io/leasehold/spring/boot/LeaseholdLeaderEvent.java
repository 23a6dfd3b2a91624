package io.leasehold.spring.boot;

import org.springframework.context.ApplicationEvent;

/**
 * A change of leadership of one {@link LeaseholdLeaderInitiator}, published as a Spring
 * application event (as Spring Integration's {@code OnGrantedEvent} / {@code OnRevokedEvent} are).
 * Listen with {@code @EventListener} for {@link LeaderGrantedEvent} and {@link LeaderRevokedEvent}.
 */
public abstract class LeaseholdLeaderEvent extends ApplicationEvent {

  private static final long serialVersionUID = 1L;

  private final String role;
  private final long fencingToken;

  LeaseholdLeaderEvent(LeaseholdLeaderInitiator source, String role, long fencingToken) {
    super(source);
    this.role = role;
    this.fencingToken = fencingToken;
  }

  /** {@return the role, the name the initiator was given (the property key for configured ones)} */
  public String getRole() {
    return role;
  }

  /** {@return the fencing token of the term that started or ended} */
  public long getFencingToken() {
    return fencingToken;
  }

  @Override
  public LeaseholdLeaderInitiator getSource() {
    return (LeaseholdLeaderInitiator) super.getSource();
  }
}
