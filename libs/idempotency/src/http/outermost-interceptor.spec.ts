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

describe('isOutermostInterceptor', () => {
  it('is true when the route runs ours first: on the method, on the class, or as the only global', () => {
    expect(outermost(new ApplicationConfig(), UseInterceptors(Ours, Other))).toBe(true);
    expect(outermost(new ApplicationConfig(), () => undefined, UseInterceptors(Ours))).toBe(true);
    const config = new ApplicationConfig();
    config.useGlobalInterceptors(new Ours());
    expect(outermost(config, UseInterceptors(Other))).toBe(true);
  });

  it("lets nestjs-cls's ClsInterceptor run in front: it hands the value on untouched", () => {
    const config = new ApplicationConfig();
    config.useGlobalInterceptors(new ClsInterceptor());
    expect(outermost(config, UseInterceptors(Ours))).toBe(true);
    expect(outermost(new ApplicationConfig(), UseInterceptors(ClsInterceptor, Ours))).toBe(true);
  });

  it('takes no subclass for ours or for ClsInterceptor: one may map the value', () => {
    class MappingCls extends ClsInterceptor {}
    expect(outermost(new ApplicationConfig(), UseInterceptors(OursSubclass))).toBe(false);
    const config = new ApplicationConfig();
    config.useGlobalInterceptors(new OursSubclass());
    expect(outermost(config, UseInterceptors(Ours))).toBe(false);
    const clsSubclass = new ApplicationConfig();
    clsSubclass.useGlobalInterceptors(new MappingCls());
    expect(outermost(clsSubclass, UseInterceptors(Ours))).toBe(false);
  });

  it('is false when any interceptor runs around ours: a global, the class’s, or one listed before it', () => {
    const config = new ApplicationConfig();
    config.useGlobalInterceptors(new Other());
    expect(outermost(config, UseInterceptors(Ours))).toBe(false);
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
