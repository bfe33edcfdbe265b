import {
  BadRequestException,
  HttpException,
  NotFoundException,
  UnprocessableEntityException,
} from '@nestjs/common';
import { problemFromException } from './problem-details';

describe('problemFromException', () => {
  it('keeps a response that already is a problem, forcing the real status', () => {
    const problem = problemFromException(
      new UnprocessableEntityException({ type: '/problems/x', title: 'X', code: 'x' }),
    );
    expect(problem).toEqual({ type: '/problems/x', title: 'X', code: 'x', status: 422 });
  });

  it('turns validation messages into errors', () => {
    const problem = problemFromException(new BadRequestException(['a must be a string']));
    expect(problem).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'The request is invalid.',
      errors: ['a must be a string'],
    });
  });

  it('uses a string message as the detail', () => {
    expect(problemFromException(new NotFoundException('No such order'))).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'No such order',
    });
    expect(problemFromException(new HttpException('Gone', 410))).toEqual({
      type: 'about:blank',
      title: 'Gone',
      status: 410,
    });
  });
});
