import 'reflect-metadata';
import {
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
  Redirect,
  Render,
  Sse,
  UseInterceptors,
} from '@nestjs/common';
import { ApplicationConfig, Reflector } from '@nestjs/core';
import { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper';
import { ClsInterceptor } from 'nestjs-cls';
import { isOutermostInterceptor } from './outermost-interceptor';

class Ours implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}
class OursSubclass extends Ours {}
class Other implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}

/** A fresh controller per test: the decision is kept per (controller, handler). */
function controllerWith(
  decorate: (target: object, key: string, descriptor: PropertyDescriptor) => void,
) {
  class Controller {
    create(): string {
      return 'created';
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(Controller.prototype, 'create')!;
  decorate(Controller.prototype, 'create', descriptor);
  return Controller;
}

function outermost(
  config: ApplicationConfig | undefined,
  decorate: (target: object, key: string, descriptor: PropertyDescriptor) => void,
  onClass?: ClassDecorator,
): boolean {
  const controller = controllerWith(decorate);
  onClass?.(controller);
  return isOutermostInterceptor(
    config,
    new Reflector(),
    controller,
    controller.prototype.create,
    Ours,
  );
}

/** An app's config with these global interceptors, in this order. */
function withGlobals(...interceptors: NestInterceptor[]): ApplicationConfig {
  const config = new ApplicationConfig();
  config.useGlobalInterceptors(...interceptors);
  return config;
}

describe('isOutermostInterceptor', () => {
  it('is true when the route runs ours first: on the method, on the class, or as the only global', () => {
    expect(outermost(new ApplicationConfig(), UseInterceptors(Ours, Other))).toBe(true);
    expect(outermost(new ApplicationConfig(), () => undefined, UseInterceptors(Ours))).toBe(true);
    expect(outermost(withGlobals(new Ours()), UseInterceptors(Other))).toBe(true);
  });

  it("lets nestjs-cls's ClsInterceptor run in front: it hands the value on untouched", () => {
    expect(outermost(withGlobals(new ClsInterceptor()), UseInterceptors(Ours))).toBe(true);
    expect(outermost(new ApplicationConfig(), UseInterceptors(ClsInterceptor, Ours))).toBe(true);
  });

  it('takes no subclass for ours or for ClsInterceptor: one may map the value', () => {
    class ClsSubclass extends ClsInterceptor {}
    expect(outermost(new ApplicationConfig(), UseInterceptors(OursSubclass))).toBe(false);
    expect(outermost(withGlobals(new OursSubclass()), UseInterceptors(Ours))).toBe(false);
    expect(outermost(withGlobals(new ClsSubclass()), UseInterceptors(Ours))).toBe(false);
  });

  it('is false when any interceptor runs around ours: a global, the class’s, or one listed before it', () => {
    expect(outermost(withGlobals(new Other()), UseInterceptors(Ours))).toBe(false);
    expect(outermost(new ApplicationConfig(), UseInterceptors(Ours), UseInterceptors(Other))).toBe(
      false,
    );
    expect(outermost(new ApplicationConfig(), UseInterceptors(Other, Ours))).toBe(false);
    const requestScoped = new ApplicationConfig();
    requestScoped.addGlobalRequestInterceptor(new InstanceWrapper({ metatype: Other }));
    expect(outermost(requestScoped, UseInterceptors(Ours))).toBe(false);
  });

  it('is false when the router does not send the value as the body, or without the app’s config', () => {
    const both =
      (decorator: MethodDecorator) =>
      (target: object, key: string, descriptor: PropertyDescriptor) => {
        UseInterceptors(Ours)(target, key, descriptor);
        decorator(target, key, descriptor);
      };
    expect(outermost(new ApplicationConfig(), both(Redirect('/elsewhere')))).toBe(false);
    expect(outermost(new ApplicationConfig(), both(Render('view')))).toBe(false);
    expect(outermost(new ApplicationConfig(), both(Sse('events')))).toBe(false);
    expect(outermost(undefined, UseInterceptors(Ours))).toBe(false);
  });
});
